#pragma once
// The three clouds' NoticeSources (aws_notices.cpp, gcp_notices.cpp, azure_notices.cpp), each
// given its metadata server's base URL by make_notice_source() (notice.cpp).
#include <memory>
#include <string>

#include "yolotrain/cloud/notice.hpp"

namespace yolotrain::cloud::detail {

std::unique_ptr<NoticeSource> aws_notices(const std::string& base);
std::unique_ptr<NoticeSource> gcp_notices(const std::string& base);
std::unique_ptr<NoticeSource> azure_notices(const std::string& base);

}  // namespace yolotrain::cloud::detail
