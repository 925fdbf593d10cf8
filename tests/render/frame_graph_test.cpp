// The frame graph on toy graphs: passes run in the order added, and barriers go exactly where a pass reads
// or writes what an earlier pass wrote since the last barrier, or writes what was read since then; parts of
// a resource; passes contributed by modules (render/frame_passes.h).
#include "render/frame_graph.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "render/frame_passes.h"

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
  const FrameResource a = g.resource("a"), b = g.resource("b"), c = g.resource("c");
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
  const FrameResource x = g.resource("x");
  g.add("first", {}, {x}, [] {});
  g.add("second", {}, {x}, [] {});
  ASSERT_EQ(g.plan().size(), 2u);
  EXPECT_FALSE(g.plan()[0].barrier_before);
  EXPECT_TRUE(g.plan()[1].barrier_before);
}

TEST(FrameGraph, DisabledPassesRecordNothingAndCreateNoHazard) {
  FrameGraph g;
  const FrameResource x = g.resource("x"), y = g.resource("y");
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

// The per-stretch hook (the frame's breadcrumbs) runs before the first pass and after each barrier only, and
// stretch() lists a stretch's passes.
TEST(FrameGraph, StretchHookRunsOncePerStretch) {
  FrameGraph g;
  const FrameResource a = g.resource("a"), b = g.resource("b");
  g.add("w0", {}, {g.part(a, "a0")}, [] {});
  g.add("w1", {}, {g.part(a, "a1")}, [] {});
  g.add(
      "off", {}, {b}, [] {}, false);
  g.add("w2", {}, {g.part(a, "a2")}, [] {});
  g.add("read", {a}, {b}, [] {});
  std::string log;
  g.run([&] { log += "| "; }, [&](size_t pass) { log += "@" + g.passes()[pass].name + " "; });
  EXPECT_EQ(log, "@w0 | @read ");
  EXPECT_EQ(g.stretch(0), (std::vector<size_t>{0, 1, 3}));
  EXPECT_EQ(g.stretch(4), (std::vector<size_t>{4}));
}

TEST(FrameGraph, ResourcesOfAnotherGraphAreRefusedWithThePassName) {
  FrameGraph other;
  other.resource("a");
  other.resource("b");
  const FrameResource foreign = other.resource("c");
  FrameGraph g;
  g.resource("only");
  for (const FrameResource bad : {foreign, FrameResource{}}) {
    try {
      g.add("bad pass", {bad}, {}, [] {});
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("bad pass"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(g.passes().empty());
}

TEST(FrameGraph, SameNameIsTheSameResource) {
  FrameGraph g;
  const FrameResource a = g.resource("training: parameters");
  EXPECT_EQ(g.resource("training: parameters"), a);
  EXPECT_FALSE(g.resource("other") == a);
  EXPECT_EQ(g.name(a), "training: parameters");
}

// Parts of one whole are disjoint: writers of different parts share a stretch; a part conflicts with its
// whole both ways (read after write, write after read) and with itself.
TEST(FrameGraph, PartsOfOneResourceAreDisjoint) {
  FrameGraph g;
  const FrameResource slots = g.resource("slots"), other = g.resource("other");
  const FrameResource p0 = g.part(slots, "slots of object 0"), p1 = g.part(slots, "slots of object 1");
  EXPECT_EQ(g.part(slots, "slots of object 0"), p0);
  std::string log;
  auto rec = [&](const char* name) { return [&log, name] { log += std::string(name) + " "; }; };
  g.add("clear", {}, {slots}, rec("clear"));
  g.add("write0", {}, {p0}, rec("write0"));      // after the whole's write: barrier
  g.add("write1", {}, {p1}, rec("write1"));      // another part: same stretch
  g.add("again0", {}, {p0}, rec("again0"));      // the same part again: barrier
  g.add("read1", {p1}, {other}, rec("read1"));   // p1 made visible by that barrier: none
  g.add("all", {slots}, {}, rec("all"));         // the whole after a part's write: barrier
  g.add("rewrite1", {}, {p1}, rec("rewrite1"));  // a part after the whole's read: barrier
  g.run([&] { log += "| "; });
  EXPECT_EQ(log, "clear | write0 write1 | again0 read1 | all | rewrite1 ");
}

TEST(FrameGraph, PartsAreOfWholeResourcesOnly) {
  FrameGraph g;
  const FrameResource slots = g.resource("slots"), p = g.part(slots, "part");
  EXPECT_THROW(g.part(p, "part of a part"), Error);
  EXPECT_THROW(g.part(FrameResource{}, "of nothing"), Error);
  EXPECT_THROW(g.part(g.resource("other"), "part"), Error);  // declared already, of another whole
  EXPECT_THROW(g.part(slots, "slots"), Error);               // the whole's own name
}

// Contributed passes (render/frame_passes.h): independent contributors interleaved by their position in
// their own list (so the same step of many objects shares one stretch), a chain kept list after list.
TEST(FramePasses, IndependentContributorsInterleaveAndChainsStayInOrder) {
  for (const FramePasses::Order order : {FramePasses::Order::kInterleaved, FramePasses::Order::kInSequence}) {
    FrameGraph g;
    FrameResources frame;
    frame.splats = g.resource("splat slots");
    std::string log;
    int command_buffer = 0;
    FramePasses passes(g, frame, &command_buffer);
    for (int object = 0; object < 3; ++object) {
      passes.nextContributor();
      const std::string o = std::to_string(object);
      const FrameResource own = passes.resource("object " + o + ": state");
      const FrameResource slots = g.part(passes.frame().splats, "slots of object " + o);
      passes.add("upload" + o, {}, {own}, [&log, o, &command_buffer](void* cmd) {
        EXPECT_EQ(cmd, &command_buffer);
        log += "upload" + o + " ";
      });
      passes.add("effects" + o, {own}, {slots}, [&log, o](void*) { log += "effects" + o + " "; });
    }
    EXPECT_EQ(passes.addToGraph(order), 6u);
    g.add("preprocess", {frame.splats}, {}, [&log] { log += "preprocess "; });
    g.run([&] { log += "| "; });
    if (order == FramePasses::Order::kInterleaved)
      EXPECT_EQ(log, "upload0 upload1 upload2 | effects0 effects1 effects2 | preprocess ");
    else
      EXPECT_EQ(log, "upload0 | effects0 upload1 | effects1 upload2 | effects2 | preprocess ");
  }
}

}  // namespace
}  // namespace sf
