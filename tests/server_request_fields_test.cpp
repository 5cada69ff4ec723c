// The request-field table over HTTP: seam serve on stories260K answers every
// refused row of /v1/completions and /v1/chat/completions with a 400 naming
// the field (and runs nothing), every harmless row with 200, and an unknown
// field with a 400 naming it. (request_fields_test walks the parser.)
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "bench_serving/http_client.h"
#include "server/request_fields.h"
#include "server_probe.h"
#include "server_process.h"
#include "test_util.h"

namespace seam {
namespace {

using json = nlohmann::json;

json base_body(Endpoint e) {
  if (e == k_chat) return {{"messages", {{{"role", "user"}, {"content", "Once"}}}}, {"max_tokens", 1}};
  return {{"prompt", "Once"}, {"max_tokens", 1}};
}

TEST(ServerRequestFields, EachRowOverHttp) {
  test::ServerProcess server;
  auto post = [&](Endpoint e, const json& body) {
    HttpClient cli("127.0.0.1", server.port());
    cli.set_read_timeout(60);
    return cli.Post(endpoint_path(e), body.dump(), "application/json");
  };
  const double steps_before = test::settled_metric(server.port(), "seam_steps_total");
  int n_refused = 0, n_harmless = 0;
  for (const RequestField& f : request_fields()) {
    if (f.status == FieldStatus::honoured) continue;
    for (Endpoint e : {k_completions, k_chat}) {
      if (!(f.endpoints & e)) continue;
      json body = base_body(e);
      body[f.name] = f.status == FieldStatus::harmless ? json("anything") : json({{"asks", "for something"}});
      auto res = post(e, body);
      ASSERT_TRUE(res) << res.error();
      const std::string where = std::string(f.name) + " on " + endpoint_path(e);
      if (f.status == FieldStatus::harmless) {
        EXPECT_EQ(res->status, 200) << where << ": " << res->body;
        ++n_harmless;
      } else {
        EXPECT_EQ(res->status, 400) << where << ": " << res->body;
        const json j = json::parse(res->body, nullptr, false);
        ASSERT_TRUE(j.is_object() && j.contains("error")) << where << ": " << res->body;
        EXPECT_EQ(j["error"]["param"], f.name) << where;
        EXPECT_EQ(j["error"]["type"], "invalid_request_error") << where;
        ++n_refused;
      }
    }
  }
  EXPECT_GT(n_refused, 70);  // 77 since issue 21 honoured the structured-output rows
  EXPECT_GT(n_harmless, 10);
  // The refused ones never reached the engine: only the harmless ones stepped it.
  const double steps_after = test::settled_metric(server.port(), "seam_steps_total");
  EXPECT_LE(steps_after - steps_before, double(n_harmless) * 2) << "refused requests ran";

  for (Endpoint e : {k_completions, k_chat}) {
    json body = base_body(e);
    body["temprature"] = 0.5;  // a typo: silently sampling at 1.0 would be wrong
    auto res = post(e, body);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << res->body;
    EXPECT_EQ(json::parse(res->body)["error"]["param"], "temprature");
  }
}

}  // namespace
}  // namespace seam
