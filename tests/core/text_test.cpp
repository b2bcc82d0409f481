// UTF-8 well-formedness and one-line messages.
#include "ridgeline/core/text.hpp"

#include <gtest/gtest.h>

namespace ridgeline {
namespace {

TEST(Text, ValidUtf8) {
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("\xC3\xA9"));              // é, U+00E9
  EXPECT_TRUE(is_valid_utf8("\xE2\x82\xAC"));          // €, U+20AC
  EXPECT_TRUE(is_valid_utf8("\xF0\x9F\x98\x80"));      // U+1F600
  EXPECT_FALSE(is_valid_utf8("\xff"));                  // never in UTF-8
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));              // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));          // a surrogate, U+D800
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));      // past U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xE2\x82"));              // cut short
}

TEST(Text, InvalidBytesBecomeTheReplacementCharacter) {
  EXPECT_EQ(valid_utf8("a\xff" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(valid_utf8("\xE2\x82"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // each stray byte
  EXPECT_EQ(valid_utf8("caf\xC3\xA9"), "caf\xC3\xA9");             // valid text untouched
}

TEST(Text, OneLineEscapesControlCharacters) {
  EXPECT_EQ(one_line("h200\nx"), "h200\\nx");
  EXPECT_EQ(one_line("a\tb\rc\x01"), "a\\tb\\rc\\x01");
  EXPECT_EQ(one_line("\xff"), "\xEF\xBF\xBD");
}

TEST(Text, AsciiLowerLeavesOtherBytes) {
  EXPECT_EQ(ascii_lower("H100-SXM"), "h100-sxm");
  EXPECT_EQ(ascii_lower("Caf\xC3\x89 @Z[`a"), "caf\xC3\x89 @z[`a");  // É's bytes and the neighbours of A-Z kept
  EXPECT_EQ(ascii_lower(""), "");
}

}  // namespace
}  // namespace ridgeline
