// kfaild-gray's command line: what kfaild sends is what the helper reads back, and the helper
// refuses every word it would not have built itself.

#include "server/fault/gray_helper.h"

#include <catch2/catch.hpp>

#include "server/fault/command.h"
#include "tests/support/paths.h"

namespace gray_helper_test {

using namespace kfaild::fault;
using namespace std::chrono_literals;

namespace {

HelperRequest isolateRequest() {
  HelperRequest r;
  r.op = HelperOp::isolate;
  r.netns = "kfl19000-n1";
  r.isolate.instance = "i0a1b2c3d";
  r.isolate.drill = "12";
  r.isolate.from = IsolateFrom::clients;
  r.isolate.mode = IsolateMode::reject;
  r.isolate.duration = 40s;
  r.isolate.peers.quorum = {"10.77.19.100"};
  r.isolate.peers.brokers = {"10.77.19.2", "fd00::3"};
  r.keep.keep_tcp_ports = {22, 2200};
  return r;
}

std::string refusalOf(const std::vector<std::string>& words) {
  auto parsed = parseHelperWords(words);
  return parsed.ok() ? std::string("accepted") : parsed.error().message;
}

}  // namespace

TEST_CASE(
    "kfaild-gray reads back exactly the request kfaild sent, and builds the same script from it",
    "[unit]") {
  const auto isolate = isolateRequest();
  auto read = parseHelperWords(helperWords(isolate));
  REQUIRE(read.ok());
  CHECK(read->netns == "kfl19000-n1");
  CHECK(helperScript(*read) == nftIsolateScript(isolate.isolate, isolate.keep));

  HelperRequest throttle;
  throttle.op = HelperOp::throttle;
  throttle.pid = 4242;
  throttle.check = true;
  throttle.throttle = {"7", "", 8000, 60s, {"10.0.0.2"}};
  read = parseHelperWords(helperWords(throttle));
  REQUIRE(read.ok());
  CHECK(read->pid == 4242);
  CHECK(read->check);
  CHECK(helperScript(*read) == nftThrottleScript(throttle.throttle, {}));

  HelperRequest fill;
  fill.op = HelperOp::fill;
  fill.disk = {"9", "i0a1b2c3d", 30s, "/srv/kafka-fill", {"/srv/kafka/data", "/srv/kafka/data2"}};
  read = parseHelperWords(helperWords(fill));
  REQUIRE(read.ok());
  CHECK(helperScript(*read) == diskFillScript(fill.disk));

  HelperRequest free;
  free.op = HelperOp::free;
  free.filler = fillerStem("/srv/kafka-fill", "i0a1b2c3d", "9");
  read = parseHelperWords(helperWords(free));
  REQUIRE(read.ok());
  CHECK(helperScript(*read) == diskFreeScript("/srv/kafka-fill", "i0a1b2c3d", "9"));

  HelperRequest heal;
  heal.op = HelperOp::heal;
  heal.table = "kfaild_i0a1b2c3d_d12";
  heal.netns = "n1";
  read = parseHelperWords(helperWords(heal));
  REQUIRE(read.ok());
  CHECK(helperScript(*read) == nftHealScript("kfaild_i0a1b2c3d_d12"));
}

TEST_CASE("kfaild-gray refuses every word it would not have built itself", "[unit][security]") {
  auto words = helperWords(isolateRequest());
  auto with = [&](const std::string& name, const std::string& value) {
    auto w = words;
    for (std::size_t i = 0; i + 1 < w.size(); ++i)
      if (w[i] == name) w[i + 1] = value;
    return w;
  };
  CHECK(refusalOf(words) == "accepted");
  CHECK(refusalOf(with("--broker", "10.0.0.1; reboot")).find("is not an IPv4 or IPv6 address") !=
        std::string::npos);
  CHECK(refusalOf(with("--netns", "../../proc/1/ns/net")).find("is not a namespace name") !=
        std::string::npos);
  CHECK(refusalOf(with("--drill", "1\ndelete table inet filter")).find("is not 1 to 48") !=
        std::string::npos);
  CHECK(refusalOf(with("--duration", "3601")).find("1 to 3600 seconds") != std::string::npos);
  CHECK(refusalOf(with("--duration", "0")).find("1 to 3600 seconds") != std::string::npos);
  CHECK(refusalOf(with("--keep-port", "70000")).find("is not a TCP port") != std::string::npos);
  CHECK(refusalOf(with("--instance", "x")).find("is not valid") != std::string::npos);
  CHECK(refusalOf(with("--mode", "accept")).find("is not drop or reject") != std::string::npos);
  auto extra = words;
  extra.insert(extra.end(), {"--table", "kfaild_d1"});
  CHECK(refusalOf(extra) == "--table does not go with isolate");
  extra = words;
  extra.insert(extra.end(), {"--drill", "13"});
  CHECK(refusalOf(extra) == "--drill given twice");
  CHECK(refusalOf({"--netns", "a", "--pid", "5", "heal", "--table", "kfaild_d1"}) ==
        "--netns and --pid: only one place");
  CHECK(refusalOf({"--pid", "1", "heal", "--table", "kfaild_d1"}).find("is not a process id") !=
        std::string::npos);
  CHECK(refusalOf({"heal", "--table", "filter"}) == "--table 'filter' is not a kfaild table");
  CHECK(refusalOf({"heal", "--table", "kfaild_d1", "--check"}) ==
        "--check goes only with isolate and throttle");
  CHECK(refusalOf({"free", "--filler", "/etc/sudoers"}) ==
        "--filler '/etc/sudoers' is not a kfaild disk filler");
  CHECK(refusalOf({"free", "--filler", "/srv/../etc/kfaild_fill_d1"})
            .find("is not a kfaild disk filler") != std::string::npos);
  CHECK(refusalOf({"--netns", "n1", "free", "--filler", "/srv/kfaild_fill_d1"}) ==
        "free acts on a filesystem, not in a network namespace");
  CHECK(refusalOf({"fill", "--instance", "", "--drill", "1", "--duration", "5", "--fill-dir", "/"})
            .find("fill_dir / is refused") != std::string::npos);
  CHECK(refusalOf({"fill-sweep", "--instance", "", "--fill-dir", "//"}).find("other than /") !=
        std::string::npos);
  CHECK(refusalOf({"sh", "-c", "id"}) == "unknown operation 'sh'");
  CHECK(refusalOf({}) == "no operation given");
}

TEST_CASE("kfaild-gray's window line is read back, a malformed one is not", "[unit]") {
  const auto line = helperWindowLine(1'700'000'000'000'000, 1'700'000'000'020'000);
  const auto window = helperWindow("table inet x\n" + line + "\n");
  REQUIRE(window);
  CHECK(window->start_us == 1'700'000'000'000'000);
  CHECK(window->end_us == 1'700'000'000'020'000);
  CHECK_FALSE(helperWindow("kfaild-gray-window=5 4\n"));
  CHECK_FALSE(helperWindow("kfaild-gray-window=abc\n"));
  CHECK_FALSE(helperWindow(""));
}

TEST_CASE("the kfaild-gray program refuses a bad request with status 2 and runs nothing",
          "[unit][security]") {
  const std::string helper = KFAILD_BINARY_DIR "/server/kfaild-gray";
  auto out = runCommand({helper, "heal", "--table", "filter"}, 5000ms);
  REQUIRE(out.ok());
  CHECK(out->exit_code == kHelperRefused);
  CHECK(out->err == "kfaild-gray: --table 'filter' is not a kfaild table\n");
  auto gone =
      runCommand({helper, "--netns", "kfaild-no-such-ns", "heal", "--table", "kfaild_d1"}, 5000ms);
  REQUIRE(gone.ok());
  CHECK(gone->exit_code == kHelperNothingThere);
}

}  // namespace gray_helper_test
