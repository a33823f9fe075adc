/*-------------------------------------------------------------------------
 *
 * sha256.h
 *	  SHA-256 (FIPS 180-4), for the addresses of the memory store.
 *
 * Plain C, no PostgreSQL header and no allocation: a digest of a few
 * dozen bytes costs two compressions, where a cryptographic library's
 * generic interface costs more in setup than in hashing.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_SHA256_H
#define RATELIMIT_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define RL_SHA256_BYTES 32

typedef struct RlSha256
{
	uint32_t	h[8];
	uint64_t	length;			/* bytes fed so far */
	uint8_t		block[64];
	size_t		used;			/* bytes of block filled */
} RlSha256;

extern void rl_sha256_init(RlSha256 *ctx);
extern void rl_sha256_update(RlSha256 *ctx, const void *data, size_t len);
extern void rl_sha256_final(RlSha256 *ctx, uint8_t *digest);

#endif							/* RATELIMIT_SHA256_H */
