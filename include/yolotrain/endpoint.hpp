#pragma once

/// A run driven and watched over HTTP: the control endpoint (pause, resume, stop, checkpoint,
/// status, Prometheus /metrics). Its own library, yolotrain::endpoint (libmicrohttpd), on the
/// lifecycle core. (The Pushgateway client, remote::MetricsPusher, is yolotrain::remote's.)
#include "yolotrain/endpoint/bearer_token.hpp"
#include "yolotrain/endpoint/control_server.hpp"
#include "yolotrain/endpoint/listen_address.hpp"
#include "yolotrain/lifecycle.hpp"
