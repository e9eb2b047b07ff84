#pragma once

/// A run driven and watched over the network: the HTTP control endpoint (pause, resume, stop,
/// checkpoint, status, Prometheus /metrics) and the Pushgateway client. Its own library,
/// yolotrain::endpoint (libmicrohttpd, libcurl), on the lifecycle core.
#include "yolotrain/endpoint/bearer_token.hpp"
#include "yolotrain/endpoint/control_server.hpp"
#include "yolotrain/endpoint/listen_address.hpp"
#include "yolotrain/endpoint/metrics_push.hpp"
#include "yolotrain/lifecycle.hpp"
