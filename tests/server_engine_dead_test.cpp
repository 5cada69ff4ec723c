// A device fault over HTTP (vLLM's EngineDeadError): the in-flight request and
// every later one get 500 "engine is dead: <cause>", /health turns 503, and
// `seam serve` exits non-zero once it has answered them, so that a supervisor
// restarts it. The fault is injected into the cpu backend of a real
// `seam serve` child process (SEAM_CPU_FAULT_AT_STEP).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "bench_serving/http_client.h"
#include <nlohmann/json.hpp>

#include "server_process.h"

namespace seam::test {
namespace {

using json = nlohmann::json;

// The error message of an OpenAI error body ("" when it is not one).
std::string error_message(const std::string& body) {
  const json j = json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("error") || !j["error"].contains("message")) return "";
  return j["error"]["message"].get<std::string>();
}

TEST(ServerEngineDead, DeviceFaultFailsEveryRequestAndTheServerExitsNonZero) {
  // Step 1 is the prompt's prefill; the fault hits a decode step mid-request.
  setenv("SEAM_CPU_FAULT_AT_STEP", "6", 1);
  ServerProcess server;
  unsetenv("SEAM_CPU_FAULT_AT_STEP");
  HttpClient cli("127.0.0.1", server.port());
  cli.set_read_timeout(60, 0);

  // The request in flight when the device fails.
  auto first = cli.Post("/v1/completions",
                        "{\"prompt\": \"Once upon a time\", \"max_tokens\": 50, \"ignore_eos\": true, "
                        "\"temperature\": 0}",
                        "application/json");
  ASSERT_TRUE(first) << server.log();
  EXPECT_EQ(first->status, 500) << first->body;
  const std::string cause = error_message(first->body);
  EXPECT_EQ(cause.rfind("engine is dead: ", 0), 0u) << first->body;
  EXPECT_NE(cause.find("injected device fault at step 6"), std::string::npos) << first->body;

  // A later request, and the health check, while the process lingers.
  auto later = cli.Post("/v1/completions", "{\"prompt\": \"x\", \"max_tokens\": 2}", "application/json");
  auto health = cli.Get("/health");
  ASSERT_TRUE(later) << server.log();
  EXPECT_EQ(later->status, 500) << later->body;
  EXPECT_EQ(error_message(later->body).rfind("engine is dead: ", 0), 0u) << later->body;
  ASSERT_TRUE(health) << server.log();
  EXPECT_EQ(health->status, 503) << health->body;
  EXPECT_EQ(json::parse(health->body, nullptr, false).value("status", ""), "dead") << health->body;

  // Then it exits on its own, non-zero.
  const std::optional<int> status = server.wait_exit(30);
  ASSERT_TRUE(status.has_value()) << "seam serve still runs after its engine died; log:\n" << server.log();
  EXPECT_GT(*status, 0) << server.log();
  EXPECT_NE(server.log().find("engine is dead"), std::string::npos) << server.log();
}

}  // namespace
}  // namespace seam::test
