// Background work for the desktop app: one thread runs jobs in order; results come back to the UI thread.
#pragma once

// The UI thread never waits on a compile, a run or a script. A job runs on the queue's thread and hands its
// result back as a callback that the UI thread runs at the start of its next frame (drain()), so panels only
// ever touch their state on the UI thread. Jobs run one at a time: the Session they share is not thread-safe.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tl::gui {

class JobQueue {
 public:
  using Done = std::function<void()>;             // runs on the UI thread
  using Job = std::function<Done()>;               // runs on the queue's thread; returns what to do after

  JobQueue();
  ~JobQueue();  // finishes the running job, drops the queued ones
  JobQueue(const JobQueue&) = delete;
  JobQueue& operator=(const JobQueue&) = delete;

  // `what` names the job in the status line ("compile gemm.simt"). An exception from the job becomes an
  // `on_error` call with its message on the UI thread.
  void post(std::string what, Job job, std::function<void(const std::string&)> on_error = {});
  // From inside a job: hands `progress` to the UI thread now, before the job ends (a sweep's points as they
  // arrive). Callbacks run in the order handed over, this one before the job's own Done.
  void deliver(Done progress);
  // Runs the callbacks of finished jobs (UI thread); returns how many ran.
  int drain();
  // True while a job runs or waits, or a callback waits for drain().
  bool busy() const;
  // The running job's name and how long it has run ("" when idle), and how many wait behind it.
  std::string current(double* seconds = nullptr, int* waiting = nullptr) const;

 private:
  struct Item {
    std::string what;
    Job job;
    std::function<void(const std::string&)> on_error;
  };
  void loop();

  mutable std::mutex m_mutex;
  std::condition_variable m_cv;
  std::deque<Item> m_items;
  std::vector<Done> m_done;
  std::string m_running;
  std::chrono::steady_clock::time_point m_started;
  bool m_stop = false;
  std::thread m_thread;
};

}  // namespace tl::gui
