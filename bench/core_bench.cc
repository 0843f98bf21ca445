// Speed and memory of the core engine through the embedded API (engine + MemoryStore + system
// clock). Run: build/bench/sluice_core_bench  (see README "Benchmarks").
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <benchmark/benchmark.h>

#include "algorithm/sliding_window_log.h"
#include "sluice/sluice.h"

namespace {

using sluice::Algorithm;
using sluice::LimitSpec;

constexpr std::size_t kManyKeys = 1'000'000;

// Generous enough that every decision is an admission, so each one writes state: 4 billion per
// window for the window algorithms, a million per second with a 4-billion burst for the others.
LimitSpec generousSpec(Algorithm algorithm) {
  const bool window = algorithm == Algorithm::kFixedWindow ||
                      algorithm == Algorithm::kSlidingWindowLog ||
                      algorithm == Algorithm::kSlidingWindowCounter;
  const sluice::Rate rate{window ? 4'000'000'000u : 1'000'000u, sluice::kMicrosPerSecond};
  return LimitSpec::make(algorithm, rate, 4'000'000'000).value();
}

// A sliding log that admits everything would hold millions of entries; keep it realistic.
LimitSpec benchSpec(Algorithm algorithm) {
  if (algorithm == Algorithm::kSlidingWindowLog) {
    return LimitSpec::slidingWindowLog(sluice::Rate{100, sluice::kMicrosPerSecond}).value();
  }
  return generousSpec(algorithm);
}

// A daily quota of 1000: a key's state stays short of full (so the key stays in the table) for
// the whole run, whatever the benchmark does to it.
LimitSpec dailyQuotaSpec(Algorithm algorithm) {
  return LimitSpec::make(algorithm, sluice::Rate{1000, sluice::kMicrosPerDay}, 1000).value();
}

// Writes "client:<number>" into `buffer`, as a server builds a key from a request: the key's
// text is in cache, as it would be, rather than read from a 30 MB array of strings.
class KeyText {
 public:
  std::string_view operator()(std::uint32_t number) {
    const auto [end, ec] = std::to_chars(buffer_ + 7, buffer_ + sizeof buffer_, number);
    return {buffer_, static_cast<std::size_t>(end - buffer_)};
  }

 private:
  char buffer_[24] = {'c', 'l', 'i', 'e', 'n', 't', ':'};
};

// Checks keys client:0 .. client:999999 once each, inserting them.
void fillKeys(sluice::Limiter& limiter, const LimitSpec& spec) {
  KeyText key;
  for (std::uint32_t i = 0; i < kManyKeys; ++i)
    benchmark::DoNotOptimize(limiter.check(key(i), spec));
}

// A random permutation of the key numbers, so consecutive decisions touch unrelated memory.
std::vector<std::uint32_t> shuffledNumbers(std::size_t count, std::uint32_t seed) {
  std::vector<std::uint32_t> numbers(count);
  std::iota(numbers.begin(), numbers.end(), 0);
  std::shuffle(numbers.begin(), numbers.end(), std::mt19937(seed));
  return numbers;
}

std::size_t residentBytes() {
  long pages_total = 0;
  long pages_resident = 0;
  FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr) return 0;
  if (std::fscanf(statm, "%ld %ld", &pages_total, &pages_resident) != 2) pages_resident = 0;
  std::fclose(statm);
  return static_cast<std::size_t>(pages_resident) * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

// A typical per-client limit: 1000/s with a burst of 50. Checked millions of times a second on
// one key, nearly every decision after the first few is a denial.
LimitSpec typicalSpec(Algorithm algorithm) {
  return LimitSpec::make(algorithm, sluice::Rate{1000, sluice::kMicrosPerSecond}, 50).value();
}

// The clock a benchmark runs with: range 0 the system clock (one clock_gettime per decision),
// 1 a ticking clock (one atomic load), 2 a fixed clock (the decision alone).
struct BenchClock {
  explicit BenchClock(std::int64_t choice) : choice_(choice) {
    if (choice_ == 1) ticking_ = std::make_unique<sluice::TickingClock>();
  }
  const sluice::Clock* clock() const {
    if (choice_ == 1) return ticking_.get();
    if (choice_ == 2) return &fixed_;
    return nullptr;  // the Limiter's own SystemClock
  }
  std::string name() const {
    return choice_ == 0 ? "system-clock" : choice_ == 1 ? "ticking-clock" : "fixed-clock";
  }

 private:
  std::int64_t choice_;
  std::unique_ptr<sluice::TickingClock> ticking_;
  sluice::FakeClock fixed_{1'767'225'600LL * sluice::kMicrosPerSecond};
};

// One key checked over and over: the hot path with the key's slot in cache. range(1) picks the
// clock (see BenchClock); range(2) the spec: 0 typical (mostly denials), 1 generous (every
// decision admits and writes state).
void BM_HotKey(benchmark::State& state) {
  const auto algorithm = static_cast<Algorithm>(state.range(0));
  const BenchClock clock(state.range(1));
  const bool generous = state.range(2) == 1;
  sluice::Limiter limiter(
      sluice::LimiterOptions{.max_keys = kManyKeys, .shards = 256, .clock = clock.clock()});
  const LimitSpec spec = generous ? benchSpec(algorithm) : typicalSpec(algorithm);
  for (auto _ : state) {
    benchmark::DoNotOptimize(limiter.check("client:42", spec));
  }
  state.SetLabel(std::string(sluice::algorithmName(algorithm)) + " " + clock.name() +
                 (generous ? " admits" : " typical"));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_HotKey)->ArgsProduct({{0, 1, 2, 3, 4, 5, 6, 7}, {0, 1, 2}, {0, 1}});

// What one read of the system clock costs on this machine, for reading the figures above.
void BM_SystemClockNow(benchmark::State& state) {
  const sluice::SystemClock clock;
  for (auto _ : state) benchmark::DoNotOptimize(clock.now());
}
BENCHMARK(BM_SystemClockNow);

// A million distinct keys visited in random order: every decision misses the CPU caches.
// range(1) picks the clock; range(2) the spec: 0 generous (a key is full again a microsecond
// after its decision, so a sweep, which runs as the table grows, may drop it and a later
// decision insert it again), 1 a daily quota of 1000 (no key is ever full again during the run,
// so each decision finds its key). `keys` reports the table's size at the end.
void BM_MillionKeys(benchmark::State& state) {
  const auto algorithm = static_cast<Algorithm>(state.range(0));
  const BenchClock clock(state.range(1));
  const bool daily = state.range(2) == 1;
  const std::vector<std::uint32_t> order = shuffledNumbers(kManyKeys, 42);
  KeyText key;
  // Room for every key: at a bound of exactly a million, the fuller shards evict.
  sluice::Limiter limiter(
      sluice::LimiterOptions{.max_keys = 2 * kManyKeys, .clock = clock.clock()});
  const LimitSpec spec = daily ? dailyQuotaSpec(algorithm) : benchSpec(algorithm);
  fillKeys(limiter, spec);
  std::size_t next = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(limiter.check(key(order[next]), spec));
    next = next + 1 == kManyKeys ? 0 : next + 1;
  }
  state.SetLabel(std::string(sluice::algorithmName(algorithm)) + " " + clock.name() +
                 (daily ? " keys-stay" : " churn"));
  state.SetItemsProcessed(state.iterations());
  state.counters["keys"] = static_cast<double>(limiter.keyCount());
}
BENCHMARK(BM_MillionKeys)
    ->ArgsProduct({{static_cast<int>(Algorithm::kFixedWindow),
                    static_cast<int>(Algorithm::kSlidingWindowCounter),
                    static_cast<int>(Algorithm::kTokenBucket), static_cast<int>(Algorithm::kGcra)},
                   {0, 1},
                   {0, 1}});

// The floor under BM_MillionKeys: one dependent load from memory, chasing pointers through
// 64 MiB of cache lines in random order (as large as the million-key table, and on the same
// small pages), so every load misses the caches and the TLB. A cold-key decision must read its
// slot once, so it costs at least this, in the same run.
void BM_DependentMemoryLoad(benchmark::State& state) {
  constexpr std::size_t kLineWords = 8;  // 64-byte lines of 8-byte words
  constexpr std::size_t kLines = (std::size_t{64} << 20) / (kLineWords * sizeof(std::uint64_t));
  std::vector<std::uint64_t> memory(kLines * kLineWords);
  const std::vector<std::uint32_t> order = shuffledNumbers(kLines, 3);
  for (std::size_t i = 0; i < kLines; ++i) {
    memory[order[i] * kLineWords] = order[(i + 1) % kLines];  // one cycle through every line
  }
  std::uint64_t line = order[0];
  for (auto _ : state) {
    line = memory[line * kLineWords];
    benchmark::DoNotOptimize(line);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DependentMemoryLoad);

// Resident memory per key after filling a million keys. Measured in a child process: freed
// memory is not returned to the system, so a second measurement in one process would read zero.
double measureBytesPerKey(const LimitSpec& spec) {
  // The child inherits the heap that earlier benchmarks freed, still resident; the fill would
  // reuse it and read low. Hand it back to the system first.
  malloc_trim(0);
  const std::size_t before = residentBytes();
  sluice::Limiter limiter;
  fillKeys(limiter, spec);
  return static_cast<double>(residentBytes() - before) / static_cast<double>(limiter.keyCount());
}

void BM_MemoryPerKey(benchmark::State& state) {
  const auto algorithm = static_cast<Algorithm>(state.range(0));
  // A daily quota: no key is back to full (and swept) while the million are written.
  const LimitSpec spec = dailyQuotaSpec(algorithm);
  double bytes_per_key = 0;
  for (auto _ : state) {
    int pipe_fds[2];
    if (pipe(pipe_fds) != 0) return state.SkipWithError("pipe failed");
    const pid_t child = fork();
    if (child == 0) {
      const double measured = measureBytesPerKey(spec);
      const bool written = write(pipe_fds[1], &measured, sizeof measured) == sizeof measured;
      _exit(written ? 0 : 1);
    }
    close(pipe_fds[1]);
    if (read(pipe_fds[0], &bytes_per_key, sizeof bytes_per_key) != sizeof bytes_per_key) {
      state.SkipWithError("the measuring child failed");
    }
    close(pipe_fds[0]);
    waitpid(child, nullptr, 0);
  }
  state.counters["bytes_per_key"] = bytes_per_key;
  state.SetLabel(std::string(sluice::algorithmName(algorithm)));
}
BENCHMARK(BM_MemoryPerKey)
    ->DenseRange(0, static_cast<int>(Algorithm::kGcra))
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// Threads on distinct keys of one shared limiter: how decisions/s scale with cores. The spec is
// a daily quota, so a key stays short of full (and in the table) for a day; the million keys are
// all inserted before either run, so both runs measure decisions on existing keys (with a
// generous spec a key is full again a microsecond later and may be swept and inserted again;
// without the fill the one-thread run, which comes first, grew the table).
// `keys` reports the table's size at the end.
void BM_ThreadsDistinctKeys(benchmark::State& state) {
  static const std::vector<std::uint32_t> order = shuffledNumbers(kManyKeys, 7);
  static const LimitSpec spec = dailyQuotaSpec(Algorithm::kGcra);
  static sluice::Limiter* const limiter = [] {  // shared, lives for the run
    // Room for all of them: at the default bound of a million, the fuller shards evict.
    auto* filled = new sluice::Limiter(sluice::LimiterOptions{.max_keys = 2 * kManyKeys});
    fillKeys(*filled, spec);
    return filled;
  }();
  KeyText key;
  // Each thread owns a disjoint slice of the shuffled keys.
  const std::size_t slice = kManyKeys / static_cast<std::size_t>(state.threads());
  const std::size_t begin = slice * static_cast<std::size_t>(state.thread_index());
  std::size_t next = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(limiter->check(key(order[begin + next]), spec));
    next = next + 1 == slice ? 0 : next + 1;
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) {
    state.counters["keys"] = static_cast<double>(limiter->keyCount());
  }
}
BENCHMARK(BM_ThreadsDistinctKeys)->Threads(1)->Threads(2)->UseRealTime();

// A request checked against three limits at once (global, per client, daily quota).
void BM_ThreeLimits(benchmark::State& state) {
  sluice::Limiter limiter;
  const LimitSpec global = generousSpec(Algorithm::kGcra);
  const LimitSpec per_client = generousSpec(Algorithm::kTokenBucket);
  const LimitSpec daily = generousSpec(Algorithm::kFixedWindow);
  const sluice::LimitCheck checks[] = {
      {"global", &global, 1}, {"client:42", &per_client, 1}, {"daily:42", &daily, 1}};
  for (auto _ : state) benchmark::DoNotOptimize(limiter.check(checks));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ThreeLimits);

// One request checked against 1,000 limits at once (an embedder's batch, or a generated config
// of many limits matching one request), every key distinct and admitted.
void BM_ThousandChecksInOneRequest(benchmark::State& state) {
  sluice::Limiter limiter;
  const LimitSpec spec = generousSpec(Algorithm::kGcra);
  std::vector<std::string> keys;
  for (int i = 0; i < 1000; ++i) keys.push_back("limit-" + std::to_string(i) + ":client:42");
  std::vector<sluice::LimitCheck> checks;
  for (const std::string& key : keys) checks.push_back({key, &spec, 1});
  for (auto _ : state) benchmark::DoNotOptimize(limiter.check(checks));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ThousandChecksInOneRequest);

// A large cost denied against a full sliding log: 100,000 one-unit entries at distinct
// instants, a request for half the limit, asked again and again (a client retrying). Its
// retry-after is when enough of the oldest entries slide out; the algorithm alone, no store.
void BM_SlidingLogLargeCostDenial(benchmark::State& state) {
  constexpr std::uint64_t kLimit = 100'000;
  const LimitSpec spec =
      LimitSpec::slidingWindowLog(sluice::Rate{kLimit, sluice::kMicrosPerHour}).value();
  sluice::algorithm::SlidingWindowLog log;
  sluice::Micros now_us = 1;
  for (std::uint64_t i = 0; i < kLimit; ++i) {
    if (!log.consume(++now_us, spec, 1).allowed) state.SkipWithError("the log did not fill");
  }
  for (auto _ : state) {
    const sluice::Outcome outcome = log.evaluate(now_us, spec, kLimit / 2);
    if (outcome.allowed) state.SkipWithError("a cost over what is left was admitted");
    benchmark::DoNotOptimize(outcome.retry_after_us);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SlidingLogLargeCostDenial);

}  // namespace

BENCHMARK_MAIN();
