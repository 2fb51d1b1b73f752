//===- CompileTiming.cpp - per-phase compile times ------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// See include/pipedream/Support/CompileTiming.h. The phase tree is kept
// twice: as MLIR timers (so pass timing nests under the phases and MLIR
// prints the tree) and as our own records with process CPU time, which MLIR's
// timers do not measure.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Support/CompileTiming.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/Format.h"

#include <chrono>
#include <mutex>
#include <string>
#include <sys/resource.h>
#include <thread>
#include <vector>

namespace pipedream {

namespace {
/// Seconds of CPU (user + system) the process used so far, all threads.
double processCPUSeconds() {
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0)
    return 0;
  auto seconds = [](const timeval &t) {
    return double(t.tv_sec) + double(t.tv_usec) * 1e-6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double wallSeconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}
} // namespace

struct CompileTimingSession::Impl {
  explicit Impl(llvm::raw_ostream &os) : os(os) {}
  struct Record {
    std::string name;
    unsigned depth;
    double wallStart, cpuStart;
    double wall = 0, cpu = 0;
  };
  llvm::raw_ostream &os;
  std::thread::id thread = std::this_thread::get_id();
  mlir::DefaultTimingManager manager;
  /// Open MLIR scopes, the root first. Pointers: PassTiming keeps a
  /// reference to the scope it nests under.
  std::vector<std::unique_ptr<mlir::TimingScope>> scopes;
  std::vector<Record> records;
  /// Indices in `records` of the open phases.
  std::vector<size_t> open;
  double wallStart = wallSeconds(), cpuStart = processCPUSeconds();
};

static std::mutex sessionMutex;
static CompileTimingSession::Impl *activeSession = nullptr;

/// The active session when called from its thread, else null.
static CompileTimingSession::Impl *sessionOfThisThread() {
  std::lock_guard<std::mutex> lock(sessionMutex);
  if (activeSession && activeSession->thread == std::this_thread::get_id())
    return activeSession;
  return nullptr;
}

CompileTimingSession::CompileTimingSession(bool enabled,
                                           llvm::raw_ostream &os) {
  if (!enabled)
    return;
  std::lock_guard<std::mutex> lock(sessionMutex);
  // A nested or concurrent compile in the same process keeps the first
  // session's report.
  if (activeSession)
    return;
  impl = std::make_unique<Impl>(os);
  impl->manager.setEnabled(true);
  impl->manager.setDisplayMode(mlir::DefaultTimingManager::DisplayMode::Tree);
  impl->manager.setOutput(mlir::createOutputStrategy(
      mlir::DefaultTimingManager::OutputFormat::Text, os));
  impl->scopes.push_back(
      std::make_unique<mlir::TimingScope>(impl->manager.getRootScope()));
  activeSession = impl.get();
}

CompileTimingSession::~CompileTimingSession() {
  if (!impl)
    return;
  {
    std::lock_guard<std::mutex> lock(sessionMutex);
    activeSession = nullptr;
  }
  double wall = wallSeconds() - impl->wallStart;
  double cpu = processCPUSeconds() - impl->cpuStart;
  llvm::raw_ostream &os = impl->os;
  os << "===-------------------------------------------------------------"
        "------------===\n"
     << "  pipedream-compile phases (seconds; cpu: user + system, all "
        "threads)\n"
     << "===-------------------------------------------------------------"
        "------------===\n";
  os << llvm::format("  %-44s %10s %10s\n", "phase", "wall", "cpu");
  for (const Impl::Record &record : impl->records) {
    std::string name = std::string(2 * record.depth, ' ') + record.name;
    os << llvm::format("  %-44s %10.4f %10.4f\n", name.c_str(), record.wall,
                       record.cpu);
  }
  os << llvm::format("  %-44s %10.4f %10.4f\n", "total", wall, cpu);
  // Close every scope (the root last), then MLIR's tree with the passes.
  while (!impl->scopes.empty()) {
    impl->scopes.back()->stop();
    impl->scopes.pop_back();
  }
  impl->manager.print();
  // The manager prints again when destroyed (an empty tree, its shares
  // -nan%), unless disabled.
  impl->manager.setEnabled(false);
  os.flush();
}

TimedPhase::TimedPhase(llvm::StringRef name) {
  CompileTimingSession::Impl *session = sessionOfThisThread();
  if (!session)
    return;
  active = true;
  session->scopes.push_back(
      std::make_unique<mlir::TimingScope>(session->scopes.back()->nest(name)));
  session->open.push_back(session->records.size());
  session->records.push_back({name.str(),
                              unsigned(session->open.size() - 1),
                              wallSeconds(), processCPUSeconds()});
}

TimedPhase::~TimedPhase() {
  if (!active)
    return;
  CompileTimingSession::Impl *session = sessionOfThisThread();
  if (!session || session->open.empty())
    return;
  CompileTimingSession::Impl::Record &record =
      session->records[session->open.back()];
  record.wall = wallSeconds() - record.wallStart;
  record.cpu = processCPUSeconds() - record.cpuStart;
  session->open.pop_back();
  session->scopes.back()->stop();
  session->scopes.pop_back();
}

bool isCompileTimingEnabled() { return sessionOfThisThread() != nullptr; }

void attachPassTiming(mlir::PassManager &pm) {
  CompileTimingSession::Impl *session = sessionOfThisThread();
  if (!session)
    return;
  pm.enableTiming(*session->scopes.back());
}

} // namespace pipedream
