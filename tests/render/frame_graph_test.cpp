// The frame graph on toy graphs: passes run in the order added, and barriers go exactly where a pass reads
// or writes what an earlier pass wrote since the last barrier, or writes what was read since then.
#include "render/frame_graph.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"

namespace sf {
namespace {

// Runs the graph, logging "|" for each barrier and the pass names in order.
std::string trace(const FrameGraph& g) {
  std::string log;
  g.run([&] { log += "| "; });
  return log;
}

TEST(FrameGraph, BarriersFollowTheDeclaredHazards) {
  FrameGraph g;
  std::string log;
  const uint32_t a = g.resource("a"), b = g.resource("b"), c = g.resource("c");
  auto rec = [&](const char* name) { return [&log, name] { log += std::string(name) + " "; }; };
  g.add("clear", {}, {a}, rec("clear"));
  g.add("upload", {}, {b}, rec("upload"));        // independent of clear: same stretch
  g.add("use_a", {a}, {c}, rec("use_a"));         // read after write of a: barrier
  g.add("use_b", {b}, {}, rec("use_b"));          // b was made visible by that barrier: none
  g.add("write_b", {}, {b}, rec("write_b"));      // write after read of b: barrier
  g.add("read_c", {c}, {}, rec("read_c"));        // c written by use_a before the last barrier: visible
  g.add("rewrite_a", {}, {a}, rec("rewrite_a"));  // a read before the last barrier, not since: none
  g.add("read_a", {a}, {}, rec("read_a"));        // read after write: barrier
  g.run([&] { log += "| "; });
  EXPECT_EQ(log, "clear upload | use_a use_b | write_b read_c rewrite_a | read_a ");
  EXPECT_EQ(g.barrierCount(), 3u);
}

TEST(FrameGraph, WriteAfterWriteNeedsABarrier) {
  FrameGraph g;
  const uint32_t x = g.resource("x");
  g.add("first", {}, {x}, [] {});
  g.add("second", {}, {x}, [] {});
  ASSERT_EQ(g.plan().size(), 2u);
  EXPECT_FALSE(g.plan()[0].barrier_before);
  EXPECT_TRUE(g.plan()[1].barrier_before);
}

TEST(FrameGraph, DisabledPassesRecordNothingAndCreateNoHazard) {
  FrameGraph g;
  const uint32_t x = g.resource("x"), y = g.resource("y");
  int ran = 0;
  g.add(
      "writer", {}, {x}, [&] { ++ran; }, false);  // off this frame
  g.add("reader", {x}, {y}, [&] { ++ran; });
  EXPECT_EQ(trace(g), "");
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(g.barrierCount(), 0u);
  ASSERT_EQ(g.plan().size(), 1u);
  EXPECT_EQ(g.plan()[0].pass, 1u);
  const std::string d = g.describe();
  EXPECT_NE(d.find("writer: reads -; writes x (off this frame)"), std::string::npos) << d;
  EXPECT_NE(d.find("reader: reads x; writes y"), std::string::npos) << d;
}

TEST(FrameGraph, UndeclaredResourcesAreRefusedWithThePassName) {
  FrameGraph g;
  g.resource("only");
  try {
    g.add("bad pass", {3}, {}, [] {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad pass"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sf
