#pragma once
/// What memory this process may use: a run whose data cannot fit is refused with what it
/// would need, rather than grown until the system kills it.
namespace ridgeline {

/// Bytes this process may hold: the least of the machine's physical memory (sysconf) and its
/// address-space and data-segment limits (RLIMIT_AS, RLIMIT_DATA: `ulimit -v`, `-d`); 0 when
/// none of them is known.
double memory_limit_bytes() noexcept;

}  // namespace ridgeline
