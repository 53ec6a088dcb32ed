#include "ui/status_line.h"

#include "ui/connect_help.h"

#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "ui/connect_help.h"
#include "ui/format.h"
#include "ui/widgets.h"
#include "ui/theme.h"

namespace kiln::ui {

ReceiverAccess AccessOf(const ingest::ReceiverStats& stats) {
  return {.token = stats.token_required, .tls = stats.tls, .client_certificates = stats.client_certificates};
}

namespace {

// "On-CPU (samples)" -> "On-CPU": the rate says per second, the kind is
// enough.
std::string KindName(const std::string& label) {
  const size_t paren = label.rfind(" (");
  return paren == std::string::npos || label.back() != ')' ? label : label.substr(0, paren);
}

std::string Rate(double per_second) {
  if (per_second >= 100 || per_second == 0) return FormatCount(static_cast<uint64_t>(per_second + 0.5)) + "/s";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f/s", per_second);
  return buf;
}

// A sender as people know it: its host names, then the address.
std::string SenderName(const ingest::PeerStats& peer) {
  return peer.hosts.empty() ? peer.address : peer.hosts + " (" + peer.address + ")";
}

std::string KindRates(const std::vector<ingest::PeerStats::KindRate>& kinds) {
  std::string s;
  for (const auto& k : kinds) s += (s.empty() ? "" : ", ") + KindName(k.kind) + " " + Rate(k.per_second);
  return s;
}

}  // namespace

std::string AgentRatesSummary(const std::vector<ingest::PeerStats>& peers) {
  if (peers.empty()) return "no agents in the last minute";
  // Per kind over every sender, the busiest first.
  std::vector<ingest::PeerStats::KindRate> kinds;
  for (const auto& p : peers) {
    for (const auto& k : p.kinds) {
      auto it = std::find_if(kinds.begin(), kinds.end(), [&k](const auto& e) { return e.kind == k.kind; });
      if (it == kinds.end()) {
        kinds.push_back(k);
      } else {
        it->per_second += k.per_second;
      }
    }
  }
  std::stable_sort(kinds.begin(), kinds.end(), [](const auto& a, const auto& b) { return a.per_second > b.per_second; });
  std::string s = std::to_string(peers.size()) + (peers.size() == 1 ? " agent" : " agents");
  const std::string rates = KindRates(kinds);
  return rates.empty() ? s + ", idle" : s + ": " + rates;
}

std::string SenderSummary(const ingest::PeerStats& peer) {
  std::string s = SenderName(peer);
  const std::string rates = KindRates(peer.kinds);
  s += ": " + (rates.empty() ? std::string("idle") : rates) + ", " + FormatCount(peer.requests) +
       (peer.requests == 1 ? " request" : " requests");
  return s;
}

std::string ForwardingSummary(const std::vector<ingest::ForwardStatus>& forwarding, int64_t now_ns, bool* alarm) {
  *alarm = false;
  if (forwarding.empty()) return "";
  size_t down = 0;
  storage::ForwardBacklog owed;
  for (const ingest::ForwardStatus& f : forwarding) {
    // Not connected means an attempt failed; before the first attempt the
    // forwarder has simply had nothing to send.
    const bool failing = !f.connected && !f.last_error.empty();
    down += failing ? 1 : 0;
    if (failing && f.backlog.requests > 0) *alarm = true;
    owed.requests += f.backlog.requests;
    owed.bytes += f.backlog.bytes;
    if (f.backlog.requests > 0 && (owed.oldest_ns == 0 || f.backlog.oldest_ns < owed.oldest_ns)) {
      owed.oldest_ns = f.backlog.oldest_ns;
    }
  }
  const size_t n = forwarding.size();
  std::string s = n == 1 ? "forwarding to " + forwarding[0].target
                         : "forwarding to " + std::to_string(n) + " destinations";
  if (down == 0 && owed.requests == 0) return s;
  const std::string requests = FormatCount(owed.requests) + (owed.requests == 1 ? " request" : " requests");
  if (down == 0) return s + ": " + requests + " owed";  // catching up
  s = n == 1 ? s + ": not connected"
             : "forwarding: " + std::to_string(down) + " of " + std::to_string(n) + " destinations not connected";
  if (owed.requests == 0) return s;
  return s + ", " + requests + " (" + FormatBytes(owed.bytes) + ") owed, oldest " +
         FormatDuration(now_ns - owed.oldest_ns);
}

namespace {

// A red status-line button: something needs the user (an open receiver,
// a full disk, data refused). True when clicked.
bool AlarmButton(const std::string& label) {
  ImGui::PushStyleColor(ImGuiCol_Button, CurrentPalette().alarm_button);
  ImGui::PushStyleColor(ImGuiCol_ButtonHovered, CurrentPalette().alarm_button_hovered);
  const bool clicked = ImGui::SmallButton(label.c_str());
  ImGui::PopStyleColor(2);
  return clicked;
}

// "open to the network, no token" and the one-click ways out of it.
ReceiverChange DrawAccess(const ingest::ReceiverStats& r) {
  bool warn = false;
  const std::string summary = AccessSummary(r.listen_address, AccessOf(r), &warn);
  ReceiverChange change = ReceiverChange::kNone;
  if (!warn) {
    ImGui::TextDisabled("(%s)", summary.c_str());
    if (r.requests_unauthenticated > 0 && ImGui::IsItemHovered()) {
      ImGui::SetTooltip("%s requests refused for a missing or wrong token",
                        FormatCount(r.requests_unauthenticated).c_str());
    }
    return change;
  }
  if (AlarmButton(summary)) ImGui::OpenPopup("##receiver-access");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Any host that reaches this port can write into the store; click to choose");
  if (ImGui::BeginPopup("##receiver-access")) {
    const float em = ImGui::GetFontSize();
    ImGui::PushTextWrapPos(em * 30);
    ImGui::TextUnformatted(
        "Kiln listens on all interfaces and asks senders for nothing, so any host that reaches this port "
        "can write profiles into the store.");
    ImGui::PopTextWrapPos();
    ImGui::Separator();
    if (ImGui::Button("Require a token")) change = ReceiverChange::kRequireToken;
    ImGui::SameLine();
    ImGui::TextDisabled("generated, saved for the next start; agents pass it with -auth-token-file");
    if (ImGui::Button("Listen on loopback only")) change = ReceiverChange::kLoopbackOnly;
    ImGui::SameLine();
    ImGui::TextDisabled("agents on other hosts then need an ssh tunnel");
    if (change != ReceiverChange::kNone) ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
  }
  return change;
}

}  // namespace

uint64_t DataLossBadgeCount(const StatusSnapshot& status) {
  uint64_t n = 0;
  for (const storage::DataLossInfo& info : storage::DataLossTable()) {
    if (info.severity == storage::LossSeverity::kInfo) continue;
    const size_t i = static_cast<size_t>(info.reason);
    // The store's total includes what this run flushed; the receiver's
    // unflushed part is at most 10 s of counts, so the larger is close.
    n += std::max(status.data_loss[i], status.receiver ? status.receiver->losses[i] : 0);
  }
  return n;
}

void DrawDataQualityDialog(bool* open, const StatusSnapshot* status, SessionState& session) {
  if (!*open) return;
  const float em = ImGui::GetFontSize();
  ImGui::SetNextWindowSize(ImVec2(em * 56, em * 24), ImGuiCond_FirstUseEver);
  if (!ImGui::Begin("Data quality", open, ImGuiWindowFlags_NoCollapse)) {
    ImGui::End();
    return;
  }
  if (EscapeCloses()) *open = false;
  if (status == nullptr) {
    ImGui::TextDisabled("Starting...");
    ImGui::End();
    return;
  }
  ImGui::TextWrapped(
      "Every reason kiln refuses, cuts or deletes data. \"This run\" counts since kiln started; \"Total\" is "
      "kept in the store across restarts. Details of each event are in the Log.");
  if (ImGui::SmallButton("Open the Log")) session.requested_tab = "log";
  constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                     ImGuiTableFlags_Resizable | ImGuiTableFlags_SizingStretchProp;
  if (ImGui::BeginTable("##losses", 6, kFlags)) {
    ImGui::TableSetupColumn("reason", ImGuiTableColumnFlags_WidthFixed, em * 10);
    ImGui::TableSetupColumn("severity", ImGuiTableColumnFlags_WidthFixed, em * 4.5f);
    ImGui::TableSetupColumn("this run", ImGuiTableColumnFlags_WidthFixed, em * 5);
    ImGui::TableSetupColumn("total", ImGuiTableColumnFlags_WidthFixed, em * 5);
    ImGui::TableSetupColumn("of", ImGuiTableColumnFlags_WidthFixed, em * 5);
    ImGui::TableSetupColumn("what it means");
    ImGui::TableHeadersRow();
    for (const storage::DataLossInfo& info : storage::DataLossTable()) {
      const size_t i = static_cast<size_t>(info.reason);
      const uint64_t run = status->receiver ? status->receiver->losses[i] : 0;
      const uint64_t total = std::max(status->data_loss[i], run);
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(std::string(info.name).c_str());
      ImGui::TableNextColumn();
      const std::string severity(storage::SeverityName(info.severity));
      if (total > 0 && info.severity == storage::LossSeverity::kError) {
        ImGui::TextColored(CurrentPalette().error_text, "%s", severity.c_str());
      } else {
        ImGui::TextDisabled("%s", severity.c_str());
      }
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(FormatCount(run).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(FormatCount(total).c_str());
      ImGui::TableNextColumn();
      ImGui::TextDisabled("%s", std::string(info.unit).c_str());
      ImGui::TableNextColumn();
      ImGui::TextWrapped("%s", std::string(info.description).c_str());
    }
    ImGui::EndTable();
  }
  if (status->receiver && !status->receiver->peers.empty()) {
    ImGui::Separator();
    ImGui::TextUnformatted("Senders in the last minute");
    for (const ingest::PeerStats& p : status->receiver->peers) {
      std::string lost;
      for (const storage::DataLossInfo& info : storage::DataLossTable()) {
        const uint64_t n = p.losses[static_cast<size_t>(info.reason)];
        if (n > 0) lost += (lost.empty() ? "" : ", ") + std::string(info.name) + " " + FormatCount(n);
      }
      ImGui::Text("%s: %s requests, %s samples%s%s", SenderName(p).c_str(), FormatCount(p.requests).c_str(),
                  FormatCount(p.samples).c_str(), lost.empty() ? "" : "; ", lost.c_str());
    }
  }
  ImGui::End();
}

namespace {

void StatusSeparator() {
  ImGui::SameLine();
  ImGui::TextDisabled("|");
  ImGui::SameLine();
}

// The red badges: new data refused by the disk guard, and data refused or
// cut (the Data quality panel).
void DrawAlarms(const StatusSnapshot& status, SessionState& session, StatusLineActions& actions) {
  const storage::StoreStats& st = status.stats;
  if (!st.writes_refused.empty()) {
    // New data is refused (the disk guard): red, and where to read why.
    StatusSeparator();
    const bool full = st.writes_refused == "disk nearly full";
    const std::string badge =
        full ? "disk full: " + FormatBytes(st.disk_free_bytes) + " free" : std::string("store cannot write");
    if (AlarmButton(badge)) session.requested_tab = "log";
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip(
          "New data is refused (%s): %s free, kiln keeps %s free (--disk-reserve).\n"
          "Agents keep their data and retry; kiln accepts again by itself once space is freed.\n"
          "Click for the Log.",
          st.writes_refused.c_str(), FormatBytes(st.disk_free_bytes).c_str(),
          FormatBytes(st.disk_reserve_bytes).c_str());
    }
  }
  if (!st.retention_problem.empty()) {
    // Retention cannot hold the size limit: the parts it does not delete
    // outgrew it. The newest samples are kept; the user must choose.
    StatusSeparator();
    if (AlarmButton("store over its limit")) session.requested_tab = "log";
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s.\nClick for the Log.", st.retention_problem.c_str());
  }
  if (status.receiver && status.receiver->token_in_clear_hosts > 0) {
    StatusSeparator();
    const uint64_t hosts = status.receiver->token_in_clear_hosts;
    if (AlarmButton("token sent without TLS")) session.requested_tab = "log";
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip(
          "%s other host%s sent the token in clear text: anyone on the network path can read it.\n"
          "Start kiln with --tls-cert and --tls-key (agents: -tls-ca-file), or reach it through ssh -R.\n"
          "Click for the Log.",
          FormatCount(hosts).c_str(), hosts == 1 ? "" : "s");
    }
  }
  const uint64_t lost = DataLossBadgeCount(status);
  if (lost > 0) {
    StatusSeparator();
    if (AlarmButton(FormatCount(lost) + " refused or cut")) actions.open_data_quality = true;
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip(
          "Requests, profiles or strings were refused or cut; click for the Data quality panel");
    }
  }
}

// Forwarding, per destination in the tooltip; red while data waits on a
// destination that is down (click for the Log, which says why).
void DrawForwarding(const StatusSnapshot& status, SessionState& session) {
  bool alarm = false;
  const std::string summary = ForwardingSummary(status.forwarding, status.taken_ns, &alarm);
  if (summary.empty()) return;
  StatusSeparator();
  if (alarm) {
    if (AlarmButton(summary)) session.requested_tab = "log";
  } else {
    ImGui::TextDisabled("%s", summary.c_str());
  }
  if (ImGui::IsItemHovered()) {
    ImGui::BeginTooltip();
    for (const ingest::ForwardStatus& f : status.forwarding) {
      ImGui::TextUnformatted(ingest::DescribeForwardStatus(f, status.taken_ns).c_str());
    }
    ImGui::TextDisabled("What is owed is kept in the store until delivered%s", alarm ? "; click for the Log" : "");
    ImGui::EndTooltip();
  }
}

}  // namespace

StatusLineActions DrawStatusLine(SessionState& session, const StatusSnapshot* status,
                                 const AnalysisSnapshot* analysis, bool computing,
                                 const SymbolActivity* symbols) {
  StatusLineActions actions;
  ReceiverChange& change = actions.receiver;
  if (!status) {
    ImGui::TextDisabled("Starting...");
    return actions;
  }
  if (status->receiver) {
    const auto& r = *status->receiver;
    ImGui::Text("Listening on %s", r.listen_address.c_str());
    ImGui::SameLine();
    change = DrawAccess(r);
  } else {
    ImGui::TextDisabled("Not listening (offline)");
  }
  // Alarms come before everything whose width changes as data arrives
  // (rates, counts, "updating"), so a badge stays where the user is about
  // to click it.
  DrawAlarms(*status, session, actions);
  DrawForwarding(*status, session);
  if (status->receiver) {
    const auto& r = *status->receiver;
    StatusSeparator();
    const std::string agents = AgentRatesSummary(r.peers);
    if (r.peers.empty()) {
      ImGui::TextDisabled("%s", agents.c_str());
    } else {
      ImGui::TextUnformatted(agents.c_str());
      if (ImGui::IsItemHovered()) {
        ImGui::BeginTooltip();
        for (const auto& p : r.peers) ImGui::TextUnformatted(SenderSummary(p).c_str());
        ImGui::EndTooltip();
      }
    }
  }
  StatusSeparator();
  const storage::StoreStats& st = status->stats;
  // What retention keeps, beside what the store holds: "1.7 MiB of 4 GiB, 14 d".
  std::string keeps;
  if (st.retention_size_bytes > 0) keeps += " of " + FormatBytes(st.retention_size_bytes);
  if (st.retention_age_ns > 0) {
    // Days read better than "336h 00m" for the usual limits.
    constexpr int64_t kDay = 86'400'000'000'000;
    const std::string age = st.retention_age_ns % kDay == 0
                                ? std::to_string(st.retention_age_ns / kDay) + " days"
                                : FormatDuration(st.retention_age_ns);
    keeps += (keeps.empty() ? ", last " : ", last ") + age;
  }
  ImGui::Text("Store: %s samples, %s%s", FormatCount(st.samples).c_str(), FormatBytes(st.disk_bytes).c_str(),
              keeps.c_str());
  if (ImGui::IsItemClicked()) actions.open_store_settings = true;
  if (ImGui::IsItemHovered() && !status->data_dir.empty()) {
    const bool retention = st.retention_age_ns > 0 || st.retention_size_bytes > 0;
    // The dictionary's memory, beside its limit: past it retention deletes
    // the oldest samples (a CI fleet's churn reaches it; a laptop never).
    std::string dictionary = FormatBytes(st.dictionary_memory_bytes);
    if (st.dictionary_memory_limit_bytes > 0) {
      dictionary += " of " + FormatBytes(st.dictionary_memory_limit_bytes) +
                    " (--dictionary-memory; past it the oldest samples go)";
    }
    ImGui::SetTooltip(
        "%s\n%s stacks, %s frames\nNames and stacks in memory: %s\n%s%s", status->data_dir.c_str(),
        FormatCount(st.stacks).c_str(), FormatCount(st.frames).c_str(), dictionary.c_str(),
        retention ? "Retention deletes the oldest samples past these limits "
                    "(click, or File > Store settings, to change them)"
                  : "No retention: nothing is deleted (click to set limits)",
        st.samples_deleted_by_retention > 0
            ? ("; " + FormatCount(st.samples_deleted_by_retention) + " deleted since kiln started").c_str()
            : "");
  }
  if (analysis && analysis->slice) {
    StatusSeparator();
    const TimeRange range = session.QueryRange();
    if (session.untimed) {
      // The range is made up for a capture without sample times: its own
      // duration is the only true one.
      ImGui::Text("Profile: %s%s%s",
                  FormatValue(analysis->request.query.sample_type, analysis->slice->total_weight).c_str(),
                  session.profile_end_ns > session.profile_start_ns ? " over " : "",
                  session.profile_end_ns > session.profile_start_ns
                      ? FormatDuration(session.profile_end_ns - session.profile_start_ns).c_str()
                      : "");
    } else {
      ImGui::Text("Selection: %s over %s",
                  FormatValue(analysis->request.query.sample_type, analysis->slice->total_weight).c_str(),
                  FormatDuration(range.Span()).c_str());
    }
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip("%s - %s\nquery %.0f ms, tree and tables %.0f ms, %s tree nodes",
                        FormatDateTime(range.from_ns).c_str(), FormatDateTime(range.to_ns).c_str(),
                        analysis->query_ms, analysis->build_ms,
                        FormatCount(analysis->tree ? analysis->tree->nodes.size() : 0).c_str());
    }
  }
  if (analysis && !analysis->error.empty()) {
    StatusSeparator();
    ImGui::TextColored(CurrentPalette().error_text, "Query failed: %s", analysis->error.c_str());
  }
  if (computing) {
    StatusSeparator();
    Spinner();
    ImGui::SameLine();
    ImGui::TextDisabled("updating");
  }
  if (symbols && symbols->busy) {
    StatusSeparator();
    Spinner();
    ImGui::SameLine();
    const std::string queued = symbols->queued > 0 ? ", " + std::to_string(symbols->queued) + " queued" : "";
    char text[512];
    std::snprintf(text, sizeof text, "symbols: %s (%s) %.0f%%%s", symbols->executable.c_str(),
                  symbols->source.c_str(), symbols->fraction * 100, queued.c_str());
    if (ImGui::Selectable(text, false, ImGuiSelectableFlags_None, ImGui::CalcTextSize(text)))
      session.requested_tab = "executables";
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("Reading symbols in the background; click for the Executables view");
  }
  return actions;
}

bool DrawEmptyStoreHelp(const StatusSnapshot* status, const std::string& local_agent) {
  const float em = ImGui::GetFontSize();
  ImGui::Dummy(ImVec2(0, em));
  ImGui::Indent(em);
  ImGui::PushTextWrapPos(em * 50);
  ImGui::TextUnformatted("No profiles yet");
  ImGui::Separator();
  const std::string listen =
      status && status->receiver ? status->receiver->listen_address : std::string("0.0.0.0:11000");
  // The commands use the port kiln actually listens on (ui/connect_help.h).
  const std::vector<ConnectRecipe> recipes =
      ConnectRecipes(listen, {}, status && status->receiver ? AccessOf(*status->receiver) : ReceiverAccess{},
                     local_agent);
  if (status && status->receiver) {
    ImGui::Text(
        "Kiln is listening for OTLP profiles on %s. Data shows up here within a second or two of "
        "an agent starting.",
        listen.c_str());
  } else {
    ImGui::TextWrapped(
        "Kiln is not listening in this session; start `kiln` without --open to receive profiles.");
  }
  ImGui::Dummy(ImVec2(0, em * 0.5f));
  ImGui::TextUnformatted("Profile this machine (Linux, as root):");
  CopyableText("agent", recipes.front().text);
  ImGui::TextDisabled("The OpenTelemetry eBPF profiler takes the same flags and works too.");
  ImGui::Dummy(ImVec2(0, em * 0.5f));
  ImGui::TextUnformatted("Profile another host, point the OpenTelemetry Collector here, or tunnel through ssh:");
  const bool connect = ImGui::Button("Connect an agent...");
  ImGui::Dummy(ImVec2(0, em * 0.5f));
  ImGui::TextUnformatted("Open a saved capture (OTLP, pprof, folded stacks, perf script):");
  CopyableText("open", "kiln --open FILE");
  ImGui::TextDisabled(
      "or drop the file on this window; `kiln import --data-dir DIR FILE` copies it into a store.");
  ImGui::Dummy(ImVec2(0, em * 0.5f));
  ImGui::TextUnformatted("Just looking around? A synthetic profile fills every view:");
  CopyableText("demo", "kiln --demo");
  ImGui::PopTextWrapPos();
  ImGui::Unindent(em);
  return connect;
}

}  // namespace kiln::ui
