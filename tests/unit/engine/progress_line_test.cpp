#include "progress_line.hpp"

#include "catch.hpp"

namespace en = yolotrain::engine;

TEST_CASE("the progress line has Ultralytics' columns and a tqdm bar", "[engine]") {
  const std::string header = en::progress_header({"box_loss", "cls_loss", "dfl_loss"});
  CHECK(header == "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size");
  // SegmentationTrainer's: its criterion's five terms.
  CHECK(en::progress_header({"box_loss", "seg_loss", "cls_loss", "dfl_loss", "sem_loss"}) ==
        "      Epoch    GPU_mem   box_loss   seg_loss   cls_loss   dfl_loss   sem_loss  Instances       Size");
  en::ProgressFigures f;
  f.epoch = 0;
  f.epochs = 30;
  f.losses = {3.748, 5.815, 4.2771};
  f.instances = 42;
  f.size = 320;
  f.batch = 6;
  f.batches = 13;
  f.elapsed_s = 4.25;
  f.timed_batches = 6;
  const std::string line = en::progress_line(f);
  CHECK(line ==
        "       1/30         0G      3.748      5.815      4.277         42        320:  46%|████▌     | 6/13 "
        "[00:04<00:05,  1.41it/s]");
  CHECK(line.size() ==
        header.size() + std::string(":  46%|████▌     | 6/13 [00:04<00:05,  1.41it/s]").size());
}

TEST_CASE("slow steps show seconds per iteration and long times show hours", "[engine]") {
  en::ProgressFigures f;
  f.epochs = 1;
  f.batch = 13;
  f.batches = 13;
  f.elapsed_s = 3725;
  f.timed_batches = 13;
  f.gpu_mem_gb = 2.3456;
  const std::string line = en::progress_line(f);
  CHECK_THAT(line, Catch::Contains("     2.35G"));
  CHECK_THAT(line, Catch::Contains("100%|██████████| 13/13 [1:02:05<00:00, 286.54s/it]"));
  CHECK(en::format_duration(59.6) == "01:00");
  CHECK(en::format_duration(-1) == "?");
}
