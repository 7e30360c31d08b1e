/* CRC-32C (Castagnoli), the checksum of Kafka record batches (magic v2).
 *
 * All functions take and return the *finished* CRC, like zlib's crc32(): start with 0, and
 * kc_crc32c(kc_crc32c(0, a, n), b, m) == kc_crc32c(0, a || b, n + m).
 * None of them touch Python objects: callers may run them without the GIL.
 */
#ifndef KAFKACORE_CRC32C_H
#define KAFKACORE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* The fastest implementation this CPU has (SSE4.2 crc32 instructions, else slice-by-8). */
uint32_t kc_crc32c(uint32_t crc, const void *buf, size_t len);

/* The portable table implementation (slice-by-8), always available; for tests and fallback. */
uint32_t kc_crc32c_sw(uint32_t crc, const void *buf, size_t len);

/* The SSE4.2 implementation; falls back to kc_crc32c_sw when the CPU lacks SSE4.2. */
uint32_t kc_crc32c_hw(uint32_t crc, const void *buf, size_t len);

/* 1 when kc_crc32c uses the SSE4.2 instructions, 0 when it uses the tables. */
int kc_crc32c_hw_available(void);

#endif
