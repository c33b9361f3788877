// JobQueue: a worker thread, a FIFO of jobs, and the finished callbacks handed back to the UI thread.
#include "app/gui/job_queue.hpp"

#include <exception>

namespace tl::gui {

JobQueue::JobQueue() : m_thread([this] { loop(); }) {}

JobQueue::~JobQueue() {
  {
    std::lock_guard lock(m_mutex);
    m_stop = true;
    m_items.clear();
  }
  m_cv.notify_all();
  m_thread.join();
}

void JobQueue::post(std::string what, Job job, std::function<void(const std::string&)> on_error) {
  {
    std::lock_guard lock(m_mutex);
    m_items.push_back({std::move(what), std::move(job), std::move(on_error)});
  }
  m_cv.notify_one();
}

void JobQueue::loop() {
  for (;;) {
    Item item;
    {
      std::unique_lock lock(m_mutex);
      m_cv.wait(lock, [this] { return m_stop || !m_items.empty(); });
      if (m_stop) return;
      item = std::move(m_items.front());
      m_items.pop_front();
      m_running = item.what;
      m_started = std::chrono::steady_clock::now();
    }
    Done done;
    try {
      done = item.job();
    } catch (const std::exception& e) {
      std::string msg = item.what + ": " + e.what();
      if (item.on_error) done = [f = item.on_error, msg] { f(msg); };
    } catch (...) {
      std::string msg = item.what + ": unknown error";
      if (item.on_error) done = [f = item.on_error, msg] { f(msg); };
    }
    std::lock_guard lock(m_mutex);
    if (done) m_done.push_back(std::move(done));
    m_running.clear();
  }
}

void JobQueue::deliver(Done progress) {
  std::lock_guard lock(m_mutex);
  m_done.push_back(std::move(progress));
}

int JobQueue::drain() {
  std::vector<Done> done;
  {
    std::lock_guard lock(m_mutex);
    done.swap(m_done);
  }
  for (auto& d : done) d();
  return static_cast<int>(done.size());
}

bool JobQueue::busy() const {
  std::lock_guard lock(m_mutex);
  return !m_running.empty() || !m_items.empty() || !m_done.empty();
}

std::string JobQueue::current(double* seconds, int* waiting) const {
  std::lock_guard lock(m_mutex);
  if (seconds)
    *seconds = m_running.empty() ? 0
                                 : std::chrono::duration<double>(std::chrono::steady_clock::now() - m_started).count();
  if (waiting) *waiting = static_cast<int>(m_items.size());
  return m_running;
}

}  // namespace tl::gui
