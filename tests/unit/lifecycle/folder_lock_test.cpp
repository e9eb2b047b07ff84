#include "yolotrain/lifecycle/files/folder_lock.hpp"

#include "catch.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include "test_support.hpp"

namespace lc = yolotrain::lifecycle;

TEST_CASE("FolderLock gives a folder one owner and names it to the next", "[lifecycle]") {
  yolotrain::test::TempDir tmp;
  const auto dir = tmp / "run";
  CHECK_FALSE(lc::FolderLock::holder(dir));
  {
    lc::FolderLock lock(dir);  // creates the folder
    CHECK(lc::FolderLock::holder(dir) == getpid());
    try {
      lc::FolderLock second(dir);  // another open file description: refused, even in this process
      FAIL("the second lock was granted");
    } catch (const lc::FolderLockedError& e) {
      CHECK(e.holder() == getpid());
      CHECK_THAT(e.what(), Catch::Contains("PID " + std::to_string(getpid())) && Catch::Contains(dir.string()));
    }
    lc::FolderLock moved(std::move(lock));
    CHECK(lc::FolderLock::holder(dir) == getpid());
  }
  CHECK_FALSE(lc::FolderLock::holder(dir));  // released with its owner
  lc::FolderLock again(dir);
}

TEST_CASE("a killed owner leaves no stale lock", "[lifecycle]") {
  yolotrain::test::TempDir tmp;
  const auto dir = tmp / "run";
  int ready[2];
  REQUIRE(pipe(ready) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    lc::FolderLock lock(dir);
    const char c = 1;
    (void)!write(ready[1], &c, 1);
    pause();
    _exit(0);
  }
  char c = 0;
  REQUIRE(read(ready[0], &c, 1) == 1);
  CHECK(lc::FolderLock::holder(dir) == child);
  CHECK_THROWS_AS(lc::FolderLock(dir), lc::FolderLockedError);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  CHECK_FALSE(lc::FolderLock::holder(dir));
  CHECK_NOTHROW(lc::FolderLock(dir));
  close(ready[0]);
  close(ready[1]);
}
