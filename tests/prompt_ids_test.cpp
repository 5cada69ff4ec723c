// cut_after_final_message: transformers' continue_final_message rule on
// rendered chat texts (the cut, trailing spaces, content parts, a template
// that drops the message).
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/prompt_ids.h"

namespace seam {
namespace {

ChatMessage assistant(const std::string& content, std::vector<std::string> parts = {}) {
  return ChatMessage{"assistant", content, std::move(parts)};
}

TEST(ContinueFinalMessage, CutsRightAfterTheLastOccurrence) {
  // ChatML: the end of turn after the message goes.
  EXPECT_EQ(cut_after_final_message("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nhi<|im_end|>\n",
                                    assistant("hi")),
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nhi");
}

TEST(ContinueFinalMessage, TrailingSpacesKeptOnlyWhereTheTemplateKeptThem) {
  // Kept by the template: kept in the prompt.
  EXPECT_EQ(cut_after_final_message("[A] Once upon </s>", assistant("Once upon ")), "[A] Once upon ");
  // Trimmed by the template (| trim): cut after the stripped text.
  EXPECT_EQ(cut_after_final_message("[A] Once upon</s>", assistant("Once upon ")), "[A] Once upon");
  // Leading spaces never matter for the cut.
  EXPECT_EQ(cut_after_final_message("[A]Once upon</s>", assistant("  Once upon")), "[A]Once upon");
}

TEST(ContinueFinalMessage, PartsUseTheLastTextPart) {
  EXPECT_EQ(cut_after_final_message("A: first\nsecond\nEND", assistant("first\nsecond", {"first", "second"})),
            "A: first\nsecond");
}

TEST(ContinueFinalMessage, AMessageTheTemplateDroppedIs400) {
  try {
    cut_after_final_message("<s>[INST] hi [/INST]", assistant("not there"));
    FAIL() << "no error";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), "continue_final_message");
  }
}

}  // namespace
}  // namespace seam
