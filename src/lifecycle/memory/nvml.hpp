#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace yolotrain::lifecycle::nvml {

/// Figures NVML gives for one device.
struct DeviceMemory {
  std::optional<std::int64_t> process_bytes;  ///< this process's bytes, when NVML lists it
  std::optional<std::int64_t> device_used;    ///< all processes' bytes
};

/// True when libnvidia-ml.so.1 could be loaded and initialised (loaded once, with dlopen).
bool available() noexcept;

/// Memory of the device with this PCI bus id ("00000000:17:00.0"); empty when NVML is absent.
DeviceMemory memory_for_pci_bus(const std::string& pci_bus_id) noexcept;

}  // namespace yolotrain::lifecycle::nvml
