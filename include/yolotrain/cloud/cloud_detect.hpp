#pragma once
// Which cloud this machine is in, from local facts only: the firmware's DMI strings, which every
// cloud's hypervisor sets (AWS: sys_vendor "Amazon EC2" or a bios_vendor / product_version naming
// Amazon; GCE: product_name "Google Compute Engine"; Azure: sys_vendor "Microsoft Corporation" with
// chassis_asset_tag 7783-7084-3265-9085, the tag Azure documents for its VMs). Nothing is sent.
#include <filesystem>

#include "yolotrain/cloud/notice.hpp"

namespace yolotrain::cloud {

/// The DMI folder read: $YOLOTRAIN_DMI_DIR when set (a test's, a container's mounted copy), else
/// /sys/class/dmi/id.
std::filesystem::path dmi_folder();

/// The cloud the DMI strings in `folder` name, or Cloud::None (no folder, unknown strings).
Cloud detect_cloud(const std::filesystem::path& folder = dmi_folder());

}  // namespace yolotrain::cloud
