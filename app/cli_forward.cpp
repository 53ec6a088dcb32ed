// --forward: the flags, and starting the forwarder beside a receiver.
#include <CLI/CLI.hpp>

#include "app/cli.h"
#include "ingest/forward/forwarder.h"

namespace kiln::app {

void AddForwardFlags(CLI::App& cli, ForwardFlags* flags) {
  cli.add_option("--forward", flags->targets,
                 "Pass every accepted request on, unchanged, to this OTLP profiles receiver (HOST:PORT; "
                 "repeatable); what is owed is kept in the store and survives restarts");
  cli.add_option("--forward-http", flags->http_urls,
                 "The same over OTLP/HTTP: POST each request's protobuf bytes to this URL (http://HOST:PORT gets "
                 "/v1development/profiles; https:// for TLS; repeatable)");
  cli.add_flag("--forward-tls", flags->tls, "Forward over TLS (the system's roots, or --forward-ca-file)");
  cli.add_option("--forward-ca-file", flags->ca_file,
                 "Trust this CA (PEM) for forwarding; implies --forward-tls (and https:// for --forward-http)");
  cli.add_option("--forward-header", flags->headers,
                 "Send KEY=VALUE with every forwarded request, e.g. authorization=Bearer TOKEN (repeatable)");
  cli.add_option("--forward-max-queue", flags->max_bytes,
                 "Most request bytes kept for one destination while it is down; past it the oldest are dropped "
                 "and counted (default 1 GiB)")
      ->transform(CLI::AsSizeValue(false));
}

absl::StatusOr<std::unique_ptr<ingest::Forwarder>> StartForwarding(const ForwardFlags& flags, storage::Store& store,
                                                                    ingest::ReceiverOptions* receiver) {
  if (flags.targets.empty() && flags.http_urls.empty()) {
    if (flags.tls || !flags.ca_file.empty() || !flags.headers.empty()) {
      return absl::InvalidArgumentError(
          "--forward-tls, --forward-ca-file and --forward-header need --forward or --forward-http");
    }
    return std::unique_ptr<ingest::Forwarder>();
  }
  absl::StatusOr<std::vector<ingest::ForwardTarget>> targets =
      ingest::ParseForwardTargets(flags.targets, flags.tls, flags.ca_file, flags.headers, flags.http_urls);
  if (!targets.ok()) return targets.status();
  receiver->forward_destinations = ingest::ForwardQueueNames(*targets);
  auto forwarder = std::make_unique<ingest::Forwarder>(&store, *std::move(targets));
  receiver->on_forwarded = [f = forwarder.get()] { f->Notify(); };
  return forwarder;
}

}  // namespace kiln::app
