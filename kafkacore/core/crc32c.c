/* CRC-32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78) for Kafka record batches.
 *
 * Two implementations, chosen once at load time:
 *
 *  - SSE4.2: the x86 `crc32` instruction does 8 bytes per call but has a latency of 3 cycles and
 *    a throughput of 1 per cycle, so one dependent chain uses a third of the unit.  We run three
 *    independent chains over three adjacent blocks and then join them: a CRC register is linear,
 *    so  state(A || B) = shift(state(A), |B|) XOR state_from_zero(B),  where shift() multiplies
 *    by x^(8|B|) modulo the polynomial.  For the two block sizes we use, shift() is a precomputed
 *    4 x 256 table (one lookup per byte of the register).
 *  - slice-by-8 tables: portable C, 8 bytes per step with 8 table lookups.
 *
 * The tables are built by a load-time constructor, before any Python code can call us, so no
 * lazy initialisation races exist between threads running without the GIL.
 */
#include "crc32c.h"

#include <string.h>

#define POLY 0x82F63B78u

/* Slice-by-8 tables: sw_table[k][b] is the register after feeding byte b followed by k zeros. */
static uint32_t sw_table[8][256];

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define KC_HAVE_X86 1
#include <nmmintrin.h>
#endif

/* Block sizes of the three-way interleave, and the shift tables that skip them. */
#define LONG_BLOCK 8192
#define SHORT_BLOCK 256
static uint32_t long_shift[4][256];
static uint32_t short_shift[4][256];

static int use_hw = 0;

/* Feed `nbytes` zero bytes into register `reg`, one bit at a time (slow: table building only). */
static uint32_t zeros_slow(uint32_t reg, size_t nbytes)
{
    for (size_t i = 0; i < nbytes * 8; i++)
        reg = (reg & 1) ? (reg >> 1) ^ POLY : reg >> 1;
    return reg;
}

/* Build the table that shifts a register over `nbytes` zero bytes.  Shifting is linear over
 * GF(2), so we shift the 32 one-bit registers the slow way and XOR their images together. */
static void build_shift(uint32_t table[4][256], size_t nbytes)
{
    uint32_t column[32];
    for (int bit = 0; bit < 32; bit++)
        column[bit] = zeros_slow((uint32_t)1 << bit, nbytes);
    for (int k = 0; k < 4; k++) {
        for (uint32_t n = 0; n < 256; n++) {
            uint32_t image = 0;
            for (int bit = 0; bit < 8; bit++)
                if (n & (1u << bit))
                    image ^= column[8 * k + bit];
            table[k][n] = image;
        }
    }
}

static inline uint32_t shift(const uint32_t table[4][256], uint32_t reg)
{
    return table[0][reg & 0xFF] ^ table[1][(reg >> 8) & 0xFF] ^ table[2][(reg >> 16) & 0xFF]
         ^ table[3][reg >> 24];
}

__attribute__((constructor)) static void kc_crc32c_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int i = 0; i < 8; i++)
            c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
        sw_table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++)
        for (int k = 1; k < 8; k++)
            sw_table[k][n] = (sw_table[k - 1][n] >> 8) ^ sw_table[0][sw_table[k - 1][n] & 0xFF];
    build_shift(long_shift, LONG_BLOCK);
    build_shift(short_shift, SHORT_BLOCK);
#ifdef KC_HAVE_X86
    __builtin_cpu_init();
    use_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
#endif
}

uint32_t kc_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
    const unsigned char *p = (const unsigned char *)buf;
    uint32_t c = ~crc;
    while (len >= 8) {
        /* Bytes are combined explicitly, so this is right on any endianness and alignment. */
        c ^= (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16)
           | ((uint32_t)p[3] << 24);
        c = sw_table[7][c & 0xFF] ^ sw_table[6][(c >> 8) & 0xFF] ^ sw_table[5][(c >> 16) & 0xFF]
          ^ sw_table[4][c >> 24] ^ sw_table[3][p[4]] ^ sw_table[2][p[5]] ^ sw_table[1][p[6]]
          ^ sw_table[0][p[7]];
        p += 8;
        len -= 8;
    }
    while (len--)
        c = (c >> 8) ^ sw_table[0][(c ^ *p++) & 0xFF];
    return ~c;
}

#ifdef KC_HAVE_X86

static inline uint64_t load64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8); /* unaligned-safe; compiles to one mov */
    return v;
}

/* Three chains over blocks [p, p+n), [p+n, p+2n), [p+2n, p+3n); returns the joined register. */
__attribute__((target("sse4.2"))) static inline uint64_t
three_way(uint64_t c0, const unsigned char *p, size_t n, const uint32_t table[4][256])
{
    uint64_t c1 = 0, c2 = 0;
    const unsigned char *end = p + n;
    do {
        c0 = _mm_crc32_u64(c0, load64(p));
        c1 = _mm_crc32_u64(c1, load64(p + n));
        c2 = _mm_crc32_u64(c2, load64(p + 2 * n));
        p += 8;
    } while (p < end);
    c0 = shift(table, (uint32_t)c0) ^ (uint32_t)c1;
    c0 = shift(table, (uint32_t)c0) ^ (uint32_t)c2;
    return c0;
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc, const void *buf,
                                                               size_t len)
{
    const unsigned char *p = (const unsigned char *)buf;
    uint64_t c = (uint32_t)~crc;
    /* Align to 8 so the 8-byte loads do not straddle cache lines more than needed. */
    while (len && ((uintptr_t)p & 7)) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        len--;
    }
    while (len >= 3 * LONG_BLOCK) {
        c = three_way(c, p, LONG_BLOCK, long_shift);
        p += 3 * LONG_BLOCK;
        len -= 3 * LONG_BLOCK;
    }
    while (len >= 3 * SHORT_BLOCK) {
        c = three_way(c, p, SHORT_BLOCK, short_shift);
        p += 3 * SHORT_BLOCK;
        len -= 3 * SHORT_BLOCK;
    }
    while (len >= 8) {
        c = _mm_crc32_u64(c, load64(p));
        p += 8;
        len -= 8;
    }
    while (len--)
        c = _mm_crc32_u8((uint32_t)c, *p++);
    return ~(uint32_t)c;
}

uint32_t kc_crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
    return use_hw ? crc32c_sse42(crc, buf, len) : kc_crc32c_sw(crc, buf, len);
}

#else

uint32_t kc_crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
    return kc_crc32c_sw(crc, buf, len);
}

#endif

uint32_t kc_crc32c(uint32_t crc, const void *buf, size_t len)
{
#ifdef KC_HAVE_X86
    if (use_hw)
        return crc32c_sse42(crc, buf, len);
#endif
    return kc_crc32c_sw(crc, buf, len);
}

int kc_crc32c_hw_available(void)
{
    return use_hw;
}
