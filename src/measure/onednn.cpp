// oneDNN for the GEMMs OpenBLAS cannot do here: loaded at run time, so that a build or a
// machine without it loses two kernels of `validate`, nothing else. Only its version 2 C API
// (Debian bookworm's libdnnl 2.6): version 3 changed the descriptor calls.
#include <fmt/format.h>

#include <cstdlib>

#include "ridgeline/measure/kernels.hpp"

#if __has_include(<oneapi/dnnl/dnnl.h>) && __has_include(<dlfcn.h>) && __has_include(<pthread.h>)
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>

#include <oneapi/dnnl/dnnl.h>
#if DNNL_VERSION_MAJOR == 2
#define RIDGELINE_ONEDNN 1
#endif
#endif

namespace ridgeline::measure {

#ifdef RIDGELINE_ONEDNN
namespace {

// The entry points used after loading, each named once: a member of Api (`dnnl_X` as `X`)
// and a dlsym in load().
#define RIDGELINE_DNNL_ENTRY_POINTS(X)                                                                      \
  X(memory_desc_init_by_tag) X(matmul_desc_init) X(primitive_desc_create) X(primitive_desc_query)           \
  X(primitive_desc_destroy) X(primitive_create) X(primitive_destroy) X(memory_create) X(memory_destroy)    \
  X(primitive_execute) X(stream_wait) X(gemm_u8s8s32)
#define RIDGELINE_DNNL_MEMBER(name) decltype(&::dnnl_##name) name = nullptr;

// The entry points used, looked up in the loaded library.
struct Api {
  OnednnInfo info;
  RIDGELINE_DNNL_ENTRY_POINTS(RIDGELINE_DNNL_MEMBER)
#undef RIDGELINE_DNNL_MEMBER
  void (*omp_set_num_threads)(int) = nullptr;
  // One CPU engine and stream for the process, never destroyed: run() calls are serial.
  dnnl_engine_t engine = nullptr;
  dnnl_stream_t stream = nullptr;
  // Whether libgomp binds the workers itself (it was loaded here, with OMP_PROC_BIND set, or
  // the user set it). Otherwise a calling thread's first call runs with `cpus`, the CPUs the
  // loading thread had, so that the workers it creates do not inherit its pin.
  bool bound = false;
  cpu_set_t cpus{};
};

// Looks `name` up in `lib`; the first name not found goes into `missing`.
template <class F>
void find(void* lib, const char* name, F& fn, std::string& missing) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (fn == nullptr && missing.empty()) missing = name;
}

Api load() {
  Api api;
  const std::string soname = fmt::format("libdnnl.so.{}", DNNL_VERSION_MAJOR);
  // Bind the OpenMP threads before libgomp reads its environment (it does once, when it is
  // loaded, and then binds the loading thread to the first place). The loading thread gets
  // its CPUs back, and the variables set here are taken out again: the process and its
  // children see neither.
  const bool gomp_loaded = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD) != nullptr;
  const bool user_bind = std::getenv("OMP_PROC_BIND") != nullptr, user_places = std::getenv("OMP_PLACES") != nullptr;
  const bool have_cpus = pthread_getaffinity_np(pthread_self(), sizeof api.cpus, &api.cpus) == 0;
  if (!user_bind) setenv("OMP_PROC_BIND", "close", 1);
  if (!user_places) setenv("OMP_PLACES", "threads", 1);
  void* lib = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (have_cpus) pthread_setaffinity_np(pthread_self(), sizeof api.cpus, &api.cpus);
  if (!user_bind) unsetenv("OMP_PROC_BIND");
  if (!user_places) unsetenv("OMP_PLACES");
  api.bound = !gomp_loaded || user_bind || !have_cpus;  // without the CPUs there is nothing to widen to
  if (lib == nullptr) {
    const char* err = dlerror();
    api.info.what = fmt::format("oneDNN not loaded: {} (Debian: libdnnl2)", err != nullptr ? err : soname.c_str());
    return api;
  }
  std::string missing;
  decltype(&::dnnl_version) version = nullptr;
  decltype(&::dnnl_engine_create) engine_create = nullptr;
  decltype(&::dnnl_stream_create) stream_create = nullptr;
  find(lib, "dnnl_version", version, missing);
  find(lib, "dnnl_engine_create", engine_create, missing);
  find(lib, "dnnl_stream_create", stream_create, missing);
#define RIDGELINE_DNNL_FIND(name) find(lib, "dnnl_" #name, api.name, missing);
  RIDGELINE_DNNL_ENTRY_POINTS(RIDGELINE_DNNL_FIND)
#undef RIDGELINE_DNNL_FIND
  if (!missing.empty()) {
    api.info.what = fmt::format("oneDNN not usable: {} has no {}", soname, missing);
    return api;
  }
  const dnnl_version_t* v = version();
  if (v->major != DNNL_VERSION_MAJOR) {
    api.info.what = fmt::format("oneDNN not usable: {} is version {}.{}, built against {}", soname, v->major, v->minor, DNNL_VERSION_MAJOR);
    return api;
  }
  // A sequential build has no OpenMP: its thread count is one, as it says.
  api.omp_set_num_threads = reinterpret_cast<void (*)(int)>(dlsym(lib, "omp_set_num_threads"));
  if (engine_create(&api.engine, dnnl_cpu, 0) != dnnl_success ||
      stream_create(&api.stream, api.engine, dnnl_stream_default_flags) != dnnl_success) {
    api.info.what = fmt::format("oneDNN not usable: {} could not create a CPU engine", soname);
    return api;
  }
  const char* runtime = v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : v->cpu_runtime == DNNL_RUNTIME_SEQ ? "sequential" : "threaded";
  api.info.loaded = true;
  api.info.what = fmt::format("oneDNN {}.{}.{} ({}{})", v->major, v->minor, v->patch, runtime,
                              api.bound ? "" : "; libgomp was loaded before it: its workers are not bound, only kept off the caller's pin");
  return api;
}

const Api& api() noexcept {
  static const Api a = load();
  return a;
}

void set_threads(const Api& a, int threads) noexcept {
  if (a.omp_set_num_threads != nullptr) a.omp_set_num_threads(threads);
}

// Where libgomp does not bind its workers, a thread's first call (which creates them: each
// calling thread has its own) runs with the loading thread's CPUs, and the caller's own
// pin is put back after it: the workers inherit the wide set, not the pin.
class FirstCallUnpinned {
 public:
  explicit FirstCallUnpinned(const Api& a) noexcept {
    thread_local bool done = false;
    if (a.bound || done) return;
    done = true;
    active_ = pthread_getaffinity_np(pthread_self(), sizeof saved_, &saved_) == 0 &&
              pthread_setaffinity_np(pthread_self(), sizeof a.cpus, &a.cpus) == 0;
  }
  ~FirstCallUnpinned() {
    if (active_) pthread_setaffinity_np(pthread_self(), sizeof saved_, &saved_);
  }
  FirstCallUnpinned(const FirstCallUnpinned&) = delete;
  FirstCallUnpinned& operator=(const FirstCallUnpinned&) = delete;

 private:
  cpu_set_t saved_{};
  bool active_ = false;
};

}  // namespace

const OnednnInfo& onednn() noexcept { return api().info; }

struct OnednnBf16Matmul::State {
  dnnl_primitive_desc_t pd = nullptr;
  dnnl_primitive_t prim = nullptr;
  dnnl_memory_t a = nullptr, b = nullptr, c = nullptr;
};

OnednnBf16Matmul::OnednnBf16Matmul(int m, int n, int k, const std::uint16_t* a, const std::uint16_t* b, float* c, int threads) noexcept
    : threads_(threads) {
  const Api& x = api();
  if (!x.info.loaded) {
    impl_ = x.info.what;
    return;
  }
  set_threads(x, threads);  // the primitive is laid out for the threads it will have
  s_ = new State;
  const dnnl_dims_t da = {m, k}, db = {k, n}, dc = {m, n};
  dnnl_memory_desc_t ma, mb, mc;
  dnnl_matmul_desc_t op;
  // The operands as they are in memory (plain row-major): any reordering oneDNN does is
  // part of each run, as a framework's call would be.
  if (x.memory_desc_init_by_tag(&ma, 2, da, dnnl_bf16, dnnl_ab) != dnnl_success ||
      x.memory_desc_init_by_tag(&mb, 2, db, dnnl_bf16, dnnl_ab) != dnnl_success ||
      x.memory_desc_init_by_tag(&mc, 2, dc, dnnl_f32, dnnl_ab) != dnnl_success ||
      x.matmul_desc_init(&op, &ma, &mb, nullptr, &mc) != dnnl_success ||
      x.primitive_desc_create(&s_->pd, &op, nullptr, x.engine, nullptr) != dnnl_success ||
      x.primitive_create(&s_->prim, s_->pd) != dnnl_success ||
      x.memory_create(&s_->a, &ma, x.engine, const_cast<std::uint16_t*>(a)) != dnnl_success ||
      x.memory_create(&s_->b, &mb, x.engine, const_cast<std::uint16_t*>(b)) != dnnl_success ||
      x.memory_create(&s_->c, &mc, x.engine, c) != dnnl_success) {
    impl_ = fmt::format("oneDNN has no bf16 matmul {}x{}x{} on this CPU", m, n, k);
    return;
  }
  const char* name = nullptr;
  x.primitive_desc_query(s_->pd, dnnl_query_impl_info_str, 0, &name);
  impl_ = name != nullptr ? name : "?";
  ok_ = true;
}

OnednnBf16Matmul::~OnednnBf16Matmul() {
  if (s_ == nullptr) return;
  const Api& x = api();
  if (s_->a != nullptr) x.memory_destroy(s_->a);
  if (s_->b != nullptr) x.memory_destroy(s_->b);
  if (s_->c != nullptr) x.memory_destroy(s_->c);
  if (s_->prim != nullptr) x.primitive_destroy(s_->prim);
  if (s_->pd != nullptr) x.primitive_desc_destroy(s_->pd);
  delete s_;
}

bool OnednnBf16Matmul::run() noexcept {
  if (!ok_) return false;
  const Api& x = api();
  set_threads(x, threads_);
  const FirstCallUnpinned unpinned(x);
  const dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, s_->a}, {DNNL_ARG_WEIGHTS, s_->b}, {DNNL_ARG_DST, s_->c}};
  return x.primitive_execute(s_->prim, x.stream, 3, args) == dnnl_success && x.stream_wait(x.stream) == dnnl_success;
}

bool onednn_gemm_u8s8s32(int m, int n, int k, const std::uint8_t* a, const std::int8_t* b, std::int32_t* c, int threads) noexcept {
  const Api& x = api();
  if (!x.info.loaded) return false;
  set_threads(x, threads);
  const FirstCallUnpinned unpinned(x);
  const std::int32_t co = 0;
  return x.gemm_u8s8s32('N', 'N', 'F', m, n, k, 1.0f, a, k, 0, b, n, 0, 0.0f, c, n, &co) == dnnl_success;
}

#else

const OnednnInfo& onednn() noexcept {
#if defined(DNNL_VERSION_MAJOR)
  static const OnednnInfo info{false, fmt::format("oneDNN not built in: its headers at build time were version {}, and ridgeline "
                                                  "uses the version 2 C API",
                                                  DNNL_VERSION_MAJOR)};
#else
  static const OnednnInfo info{false, "oneDNN not built in: its headers (Debian libdnnl-dev) were not found at build time"};
#endif
  return info;
}
struct OnednnBf16Matmul::State {};
OnednnBf16Matmul::OnednnBf16Matmul(int, int, int, const std::uint16_t*, const std::uint16_t*, float*, int) noexcept
    : impl_(onednn().what) {}
OnednnBf16Matmul::~OnednnBf16Matmul() = default;
bool OnednnBf16Matmul::run() noexcept { return false; }
bool onednn_gemm_u8s8s32(int, int, int, const std::uint8_t*, const std::int8_t*, std::int32_t*, int) noexcept { return false; }

#endif

}  // namespace ridgeline::measure
