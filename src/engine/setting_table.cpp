// Every setting, declared once (setting_values.hpp says what an entry is):
// its key, its kind, how the file's text sets it and how it is said back.
// parse_settings(), set_setting(), setting_value(), the keys kept with the
// model and the console all read this table; a test checks it against
// mailsift.conf(5) and the shipped mailsift.conf.
#include <arpa/inet.h>

#include "setting_values.hpp"

namespace mailsift::engine::setting_values {

const std::map<std::string, Entry, std::less<>>& setting_table() {
    using S = const Settings&;
    using Kind = SettingKind;
    auto threshold_text = [](double t) { return t > 1.0 ? std::string("off") : real_text(t); };
    auto optional_text = [](const std::optional<double>& d) { return d ? real_text(*d) : std::string("off"); };
    static const std::map<std::string, Entry, std::less<>> table{
        {"database",
         {Kind::administrator,
          [](Settings& s, std::string_view v) { return !v.empty() && (s.database = std::string(v), true); },
          [](S s) { return s.database.string(); }}},
        {"console_users",
         {Kind::administrator,
          [](Settings& s, std::string_view v) { return !v.empty() && (s.console.users = std::string(v), true); },
          [](S s) { return s.console.users.string(); }}},
        {"console_listen",
         {Kind::administrator,
          [](Settings& s, std::string_view v) {
              // HOST:PORT as metrics_listen; "off" or empty: no console. The daemon binds it.
              if (v == "off" || v.empty()) return s.console.listen.clear(), true;
              return host_port(v) && (s.console.listen = std::string(v), true);
          },
          [](S s) { return s.console.listen.empty() ? std::string("off") : s.console.listen; }}},
        {"console_tls_certificate",
         {Kind::administrator,
          [](Settings& s, std::string_view v) { return s.console.tls_certificate = std::string(v), true; },
          [](S s) { return s.console.tls_certificate.string(); }}},
        {"console_tls_key",
         {Kind::administrator,
          [](Settings& s, std::string_view v) { return s.console.tls_key = std::string(v), true; },
          [](S s) { return s.console.tls_key.string(); }}},
        {"console_trusted_proxies",
         {Kind::administrator,
          [](Settings& s, std::string_view v) {
              // IP addresses, separated by commas or blanks; "off" or empty: none.
              s.console.trusted_proxies.clear();
              if (v == "off") return true;
              std::size_t i = 0;
              while (i < v.size()) {
                  const std::size_t end = v.find_first_of(", \t", i);
                  const std::string_view one = v.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i);
                  if (!one.empty()) {
                      unsigned char buf[16];
                      const std::string text(one);
                      if (::inet_pton(AF_INET, text.c_str(), buf) != 1 && ::inet_pton(AF_INET6, text.c_str(), buf) != 1) {
                          return false;
                      }
                      s.console.trusted_proxies.push_back(text);
                  }
                  if (end == std::string_view::npos) break;
                  i = end + 1;
              }
              return true;
          },
          [](S s) {
              std::string out;
              for (const auto& a : s.console.trusted_proxies) out += (out.empty() ? "" : ", ") + a;
              return out;  // "": none (as socket_group)
          }}},
        {"alpha",
         number_in(Kind::scoring, &Settings::model, &model::Parameters::alpha, 0.0, 100.0, /*low_allowed=*/false)},
        {"term_frequency",
         {Kind::scoring,
          [](Settings& s, std::string_view v) {
              if (v == "raw") return s.model.term_frequency = model::TermFrequency::raw, true;
              if (v == "boolean") return s.model.term_frequency = model::TermFrequency::boolean, true;
              return false;
          },
          [](S s) { return std::string(s.model.term_frequency == model::TermFrequency::raw ? "raw" : "boolean"); }}},
        {"calibration_temperature",
         number_in(Kind::scoring, &Settings::model, &model::Parameters::calibration_temperature, 0.01, 1000)},
        {"spam_threshold",
         {Kind::administrator,
          probability(&model::Parameters::spam_threshold),
          [](S s) { return real_text(s.model.spam_threshold); }}},
        {"spam_log_odds",
         {Kind::administrator,
          log_odds(&model::Parameters::spam_log_odds),
          [=](S s) { return optional_text(s.model.spam_log_odds); }}},
        {"ham_log_odds",
         {Kind::administrator,
          log_odds(&model::Parameters::ham_log_odds),
          [=](S s) { return optional_text(s.model.ham_log_odds); }}},
        {"ham_threshold",
         {Kind::administrator,
          probability(&model::Parameters::ham_threshold),
          [](S s) { return real_text(s.model.ham_threshold); }}},
        {"reasons",
         {Kind::administrator,
          [](Settings& s, std::string_view v) { return parse_size(v, s.reasons) && s.reasons <= 1000; },
          [](S s) { return std::to_string(s.reasons); }}},
        {"batch_messages",
         {Kind::administrator,
          [](Settings& s, std::string_view v) { return parse_size(v, s.batch_messages) && s.batch_messages >= 1; },
          [](S s) { return std::to_string(s.batch_messages); }}},
        {"listen",
         {Kind::administrator,
          [](Settings& s, std::string_view v) {
              // Postfix notation; the daemon resolves it.
              const bool ok = (v.starts_with("inet:") && v.rfind(':') > 5) || (v.starts_with("unix:") && v.size() > 5);
              return ok && (s.daemon.listen = std::string(v), true);
          },
          [](S s) { return s.daemon.listen; }}},
        {"metrics_listen",
         {Kind::administrator,
          [](Settings& s, std::string_view v) {
              // HOST:PORT (an IPv6 host in brackets); "off" or empty: no metrics. The daemon binds it.
              if (v == "off" || v.empty()) return s.daemon.metrics_listen.clear(), true;
              return host_port(v) && (s.daemon.metrics_listen = std::string(v), true);
          },
          [](S s) { return s.daemon.metrics_listen.empty() ? std::string("off") : s.daemon.metrics_listen; }}},
        {"socket_mode",
         {Kind::administrator,
          [](Settings& s, std::string_view v) { return octal_mode(v, s.daemon.socket_mode); },
          [](S s) { return octal_text(s.daemon.socket_mode); }}},
        {"socket_group",
         {Kind::administrator,
          [](Settings& s, std::string_view v) { return s.daemon.socket_group = std::string(v), true; },
          [](S s) { return s.daemon.socket_group; }}},
        {"socket_owner",
         {Kind::administrator,
          [](Settings& s, std::string_view v) { return s.daemon.socket_owner = std::string(v), true; },
          [](S s) { return s.daemon.socket_owner; }}},
        {"correct_socket",
         {Kind::administrator,
          [](Settings& s, std::string_view v) {
              // A path (absolute, shorter than a unix socket's 108 bytes); "off" or empty: none.
              if (v == "off" || v.empty()) return s.daemon.correct_socket.clear(), true;
              return v.starts_with('/') && v.size() < 108 && (s.daemon.correct_socket = std::string(v), true);
          },
          [](S s) { return s.daemon.correct_socket.empty() ? std::string("off") : s.daemon.correct_socket; }}},
        {"correct_socket_mode",
         {Kind::administrator,
          [](Settings& s, std::string_view v) { return octal_mode(v, s.daemon.correct_socket_mode); },
          [](S s) { return octal_text(s.daemon.correct_socket_mode); }}},
        {"correct_socket_group",
         {Kind::administrator,
          [](Settings& s, std::string_view v) { return s.daemon.correct_socket_group = std::string(v), true; },
          [](S s) { return s.daemon.correct_socket_group; }}},
        {"correct_trusted",
         {Kind::administrator,
          [](Settings& s, std::string_view v) {
              // Unix user names or numbers, separated by spaces or commas; empty: none.
              std::vector<std::string> users;
              std::string word;
              for (const char ch : std::string(v) + " ") {
                  if (ch == ' ' || ch == ',' || ch == '\t') {
                      if (!word.empty()) users.push_back(std::move(word));
                      word.clear();
                  } else if (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.' ||
                             ch == '$') {
                      word.push_back(ch);
                  } else {
                      return false;
                  }
              }
              s.daemon.correct_trusted = std::move(users);
              return true;
          },
          [](S s) {
              std::string out;
              for (const auto& u : s.daemon.correct_trusted) out += (out.empty() ? "" : " ") + u;
              return out;
          }}},
        {"correct_peer_connections",
         {Kind::administrator,
          [](Settings& s, std::string_view v) {
              std::size_t n = 0;
              return parse_size(v, n) && n >= 1 && n <= 16 && (s.daemon.correct_peer_connections = n, true);
          },
          [](S s) { return std::to_string(s.daemon.correct_peer_connections); }}},
        {"correct_rate",
         {Kind::administrator,
          [](Settings& s, std::string_view v) {
              std::size_t n = 0;
              return parse_size(v, n) && n <= 1000000 && (s.daemon.correct_rate = n, true);
          },
          [](S s) { return std::to_string(s.daemon.correct_rate); }}},
        {"user",
         {Kind::administrator,
          [](Settings& s, std::string_view v) { return s.daemon.user = std::string(v), true; },
          [](S s) { return s.daemon.user; }}},
        {"threads",
         {Kind::administrator,
          [](Settings& s, std::string_view v) {
              return parse_size(v, s.daemon.threads) && s.daemon.threads >= 1 && s.daemon.threads <= 256;
          },
          [](S s) { return std::to_string(s.daemon.threads); }}},
        {"max_frame_bytes",
         {Kind::administrator,
          [](Settings& s, std::string_view v) {
              return parse_size(v, s.daemon.max_frame_bytes) && s.daemon.max_frame_bytes >= 65536 &&
                     s.daemon.max_frame_bytes <= 256u * 1024 * 1024;
          },
          [](S s) { return size_text(s.daemon.max_frame_bytes); }}},
        {"read_timeout",
         {Kind::administrator,
          seconds(&DaemonSettings::read_timeout),
          [](S s) { return std::to_string(s.daemon.read_timeout.count()); }}},
        {"drain_timeout",
         {Kind::administrator,
          seconds(&DaemonSettings::drain_timeout),
          [](S s) { return std::to_string(s.daemon.drain_timeout.count()); }}},
        {"refresh_interval",
         {Kind::administrator,
          [](Settings& s, std::string_view v) {
              std::size_t ms = 0;
              // At most a day: larger values overflow the clock's signed milliseconds.
              return parse_size(v, ms) && ms >= 10 && ms <= 86'400'000 &&
                     (s.daemon.refresh_interval = std::chrono::milliseconds(ms), true);
          },
          [](S s) { return std::to_string(s.daemon.refresh_interval.count()); }}},
        {"on_error",
         {Kind::administrator,
          [](Settings& s, std::string_view v) {
              if (v == "accept") return s.daemon.on_error = DaemonSettings::OnError::accept, true;
              if (v == "tempfail") return s.daemon.on_error = DaemonSettings::OnError::tempfail, true;
              return false;
          },
          [](S s) { return std::string(s.daemon.on_error == DaemonSettings::OnError::accept ? "accept" : "tempfail"); }}},
        {"oversize",
         {Kind::administrator,
          [](Settings& s, std::string_view v) {
              if (v == "prefix") return s.daemon.oversize = DaemonSettings::Oversize::prefix, true;
              if (v == "skip") return s.daemon.oversize = DaemonSettings::Oversize::skip, true;
              return false;
          },
          [](S s) { return std::string(s.daemon.oversize == DaemonSettings::Oversize::prefix ? "prefix" : "skip"); }}},
        {"skip_authenticated",
         {Kind::administrator,
          [](Settings& s, std::string_view v) { return parse_bool(v, s.daemon.skip_authenticated); },
          [](S s) { return on_off(s.daemon.skip_authenticated); }}},
        {"add_reasons",
         {Kind::administrator,
          [](Settings& s, std::string_view v) { return parse_bool(v, s.daemon.add_reasons); },
          [](S s) { return on_off(s.daemon.add_reasons); }}},
        {"spam_headers",
         {Kind::administrator,
          [](Settings& s, std::string_view v) { return parse_bool(v, s.daemon.spam_headers); },
          [](S s) { return on_off(s.daemon.spam_headers); }}},
        {"subject_tag",
         {Kind::administrator,
          [](Settings& s, std::string_view v) {
              // A header value: no control characters (DEL is one too).
              for (char c : v) if (static_cast<unsigned char>(c) < 0x20 || c == '\x7f') return false;
              return s.daemon.subject_tag = std::string(v), true;
          },
          [](S s) { return s.daemon.subject_tag; }}},
        {"record_signatures",
         {Kind::administrator,
          [](Settings& s, std::string_view v) { return parse_bool(v, s.daemon.record_signatures); },
          [](S s) { return on_off(s.daemon.record_signatures); }}},
        {"history",
         {Kind::administrator,
          [](Settings& s, std::string_view v) { return parse_bool(v, s.daemon.record_history); },
          [](S s) { return on_off(s.daemon.record_history); }}},
        {"history_subjects",
         {Kind::administrator,
          [](Settings& s, std::string_view v) { return parse_bool(v, s.daemon.history_subjects); },
          [](S s) { return on_off(s.daemon.history_subjects); }}},
        {"signature_days",
         {Kind::administrator,
          [](Settings& s, std::string_view v) {
              std::size_t days = 0;
              return parse_size(v, days) && days >= 1 && days <= 3650 &&
                     (s.daemon.signature_keep = std::chrono::seconds(days * 86400), true);
          },
          [](S s) { return std::to_string(s.daemon.signature_keep.count() / 86400); }}},
        {"learn_contacts",
         {Kind::administrator,
          [](Settings& s, std::string_view v) { return parse_bool(v, s.daemon.learn_contacts); },
          [](S s) { return on_off(s.daemon.learn_contacts); }}},
        {"stats_interval",
         {Kind::administrator,
          seconds(&DaemonSettings::stats_interval),
          [](S s) { return std::to_string(s.daemon.stats_interval.count()); }}},
        {"reject_threshold",
         {Kind::administrator,
          threshold(&DaemonSettings::reject_threshold),
          [=](S s) { return threshold_text(s.daemon.reject_threshold); }}},
        {"quarantine_threshold",
         {Kind::administrator,
          threshold(&DaemonSettings::quarantine_threshold),
          [=](S s) { return threshold_text(s.daemon.quarantine_threshold); }}},
        {"reject_reply",
         {Kind::administrator,
          [](Settings& s, std::string_view v) {
              // "5dd x.y.z text": validated fully by the daemon's milter formatter; here the shape.
              if (v.size() < 9 || (v[0] != '4' && v[0] != '5') || v[3] != ' ') return false;
              for (char c : v) if (static_cast<unsigned char>(c) < 0x20) return false;
              return s.daemon.reject_reply = std::string(v), true;
          },
          [](S s) { return s.daemon.reject_reply; }}},
        {"per_user",
         {Kind::administrator,
          [](Settings& s, std::string_view v) {
              if (v == "off") return s.per_user = PerUser::off, true;
              if (v == "recipient") return s.per_user = PerUser::recipient, true;
              if (v == "domain") return s.per_user = PerUser::domain, true;
              return false;
          },
          [](S s) {
              return std::string(s.per_user == PerUser::recipient ? "recipient"
                                 : s.per_user == PerUser::domain  ? "domain"
                                                                  : "off");
          }}},
        {"per_user_step",
         {Kind::administrator,
          [](Settings& s, std::string_view v) {
              double d = 0;
              return parse_double(v, d) && d > 0.0 && d <= 100.0 && (s.per_user_step = d, true);
          },
          [](S s) { return real_text(s.per_user_step); }}},
        {"per_user_margin",
         {Kind::administrator,
          [](Settings& s, std::string_view v) {
              double d = 0;
              return parse_double(v, d) && d >= 0.0 && d <= 100.0 && (s.per_user_margin = d, true);
          },
          [](S s) { return real_text(s.per_user_margin); }}},
        {"per_user_cap",
         {Kind::administrator,
          [](Settings& s, std::string_view v) {
              double d = 0;
              return parse_double(v, d) && d > 0.0 && d <= 1000.0 && (s.per_user_cap = d, true);
          },
          [](S s) { return real_text(s.per_user_cap); }}},
        {"train_on_error",
         {Kind::administrator,
          [](Settings& s, std::string_view v) { return parse_bool(v, s.train_on_error); },
          [](S s) { return on_off(s.train_on_error); }}},
        {"train_margin",
         {Kind::scoring,
          [](Settings& s, std::string_view v) {
              double d = 0;
              return parse_double(v, d) && d >= 0.0 && d <= 10000 && (s.train_margin = d, true);
          },
          [](S s) { return real_text(s.train_margin); }}},
        {"model",
         {Kind::administrator,
          [](Settings& s, std::string_view v) {
              if (v == "naive_bayes") return s.scorer = Scorer::naive_bayes, true;
              if (v == "linear") return s.scorer = Scorer::linear, true;
              return false;
          },
          [](S s) { return std::string(s.scorer == Scorer::linear ? "linear" : "naive_bayes"); }}},
        {"linear_learner",
         {Kind::model,
          [](Settings& s, std::string_view v) {
              const model::Learner* l = model::find_learner(v);
              return l != nullptr && (s.linear.learner = std::string(l->name()), true);
          },
          [](S s) { return s.linear.learner; }}},
        {"linear_step",
         number_in(Kind::model, &Settings::linear, &model::LinearParameters::step, 0.0, 100.0, /*low_allowed=*/false)},
        {"linear_temperature",
         number_in(Kind::model, &Settings::linear, &model::LinearParameters::temperature, 0.0, 100.0,
                   /*low_allowed=*/false)},
        {"linear_nb_rate",
         number_in(Kind::model, &Settings::linear, &model::LinearParameters::nb_rate, 0.0, 10.0)},
        {"linear_ngram_bytes",
         {Kind::model,
          [](Settings& s, std::string_view v) {
              return parse_size(v, s.slots.ngram_bytes) && s.slots.ngram_bytes <= 1024 * 1024;
          },
          [](S s) { return std::to_string(s.slots.ngram_bytes); }}},
        {"linear_rehearsal",
         {Kind::model,
          [](Settings& s, std::string_view v) { return parse_size(v, s.linear.rehearsal); },
          [](S s) { return std::to_string(s.linear.rehearsal); }}},
        {"linear_replays",
         {Kind::model,
          [](Settings& s, std::string_view v) { return parse_size(v, s.linear.replays) && s.linear.replays <= 100; },
          [](S s) { return std::to_string(s.linear.replays); }}},
        {"linear_replay_margin",
         number_in(Kind::model, &Settings::linear, &model::LinearParameters::replay_margin, 0.0, 1000.0)},
        {"linear_epochs",
         {Kind::model,
          [](Settings& s, std::string_view v) { return parse_size(v, s.linear.epochs) && s.linear.epochs <= 100; },
          [](S s) { return std::to_string(s.linear.epochs); }}},
        {"linear_hash_bits",
         {Kind::model,
          [](Settings& s, std::string_view v) {
              std::size_t n = 0;
              if (!parse_size(v, n) || n < 10 || n > 24) return false;
              // One size for the weights and for the slots that index them.
              s.linear.hash_bits = s.slots.bits = static_cast<unsigned>(n);
              return true;
          },
          [](S s) { return std::to_string(s.linear.hash_bits); }}},
        {"linear_features",
         {Kind::model,
          [](Settings& s, std::string_view v) { return parse_bool(v, s.slots.bag); },
          [](S s) { return on_off(s.slots.bag); }}},
        {"feature_confidence",
         number_in(Kind::scoring, &Settings::model, &model::Parameters::feature_confidence, 0.0, 1000)},
        {"length_norm_features",
         {Kind::scoring,
          [](Settings& s, std::string_view v) {
              return parse_size(v, s.model.length_norm_features) && s.model.length_norm_features <= 100000;
          },
          [](S s) { return std::to_string(s.model.length_norm_features); }}},
        {"header_length_norm_features",
         {Kind::scoring,
          [](Settings& s, std::string_view v) {
              return parse_size(v, s.model.header_length_norm_features) &&
                     s.model.header_length_norm_features <= 100000;
          },
          [](S s) { return std::to_string(s.model.header_length_norm_features); }}},
        {"features.words", feature_switch(&features::Options::words)},
        {"features.word_pairs", feature_switch(&features::Options::word_pairs)},
        {"features.cjk_bigrams", feature_switch(&features::Options::cjk_bigrams)},
        {"features.relay_path", feature_switch(&features::Options::relay_path)},
        {"features.dates", feature_switch(&features::Options::dates)},
        {"features.subject", feature_switch(&features::Options::subject)},
        {"features.headers", feature_switch(&features::Options::headers)},
        {"features.patterns", feature_switch(&features::Options::patterns)},
        {"features.urls", feature_switch(&features::Options::urls)},
        {"features.mime_shape", feature_switch(&features::Options::mime_shape)},
        {"features.envelope", feature_switch(&features::Options::envelope)},
        {"features.min_token_bytes",
         count_in(Kind::model, &Settings::features, &features::Options::min_token_bytes, 1)},
        {"features.max_token_bytes",
         count_in(Kind::model, &Settings::features, &features::Options::max_token_bytes, 1)},
        {"features.max_features", count_in(Kind::model, &Settings::features, &features::Options::max_features, 1)},
        {"limits.max_message_bytes",
         count_in(Kind::administrator, &Settings::limits, &mime::Limits::max_message_bytes, 1024, /*unit=*/true)},
        {"limits.max_depth", count_in(Kind::administrator, &Settings::limits, &mime::Limits::max_depth, 1)},
        {"limits.max_parts", count_in(Kind::administrator, &Settings::limits, &mime::Limits::max_parts, 1)},
        {"limits.max_headers", count_in(Kind::administrator, &Settings::limits, &mime::Limits::max_headers, 1)},
        {"limits.max_header_bytes",
         count_in(Kind::administrator, &Settings::limits, &mime::Limits::max_header_bytes, 64, /*unit=*/true)},
    };
    return table;
}


}  // namespace mailsift::engine::setting_values
