/*
 * SHA-256 (src/sha256.c) against known digests: FIPS 180-4's examples
 * ("abc", the two-block message, a million 'a's), the empty message, and
 * messages of every length around the padding boundary (55, 56, 63, 64
 * bytes), fed whole and byte by byte.
 */
#include <stdio.h>
#include <string.h>

#include "sha256.h"

static int failures = 0;

static void
hex(const uint8_t *d, char *out)
{
	for (int i = 0; i < RL_SHA256_BYTES; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

static void
check(const char *label, const void *msg, size_t len, const char *want)
{
	RlSha256	ctx;
	uint8_t		d[RL_SHA256_BYTES];
	char		got[2 * RL_SHA256_BYTES + 1];

	rl_sha256_init(&ctx);
	rl_sha256_update(&ctx, msg, len);
	rl_sha256_final(&ctx, d);
	hex(d, got);
	if (strcmp(got, want) != 0)
	{
		printf("FAIL %s (whole): %s, expected %s\n", label, got, want);
		failures++;
	}
	rl_sha256_init(&ctx);
	for (size_t i = 0; i < len; i++)
		rl_sha256_update(&ctx, (const uint8_t *) msg + i, 1);
	rl_sha256_final(&ctx, d);
	hex(d, got);
	if (strcmp(got, want) != 0)
	{
		printf("FAIL %s (bytewise): %s, expected %s\n", label, got, want);
		failures++;
	}
}

int
main(void)
{
	static char million[1000000];
	char		a[64];

	check("empty", "", 0,
		  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	check("abc", "abc", 3,
		  "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	check("two blocks",
		  "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	memset(million, 'a', sizeof(million));
	check("a million a", million, sizeof(million),
		  "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	memset(a, 'a', sizeof(a));
	check("55 a", a, 55,
		  "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
	check("56 a", a, 56,
		  "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
	check("63 a", a, 63,
		  "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34");
	check("64 a", a, 64,
		  "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
	if (failures)
	{
		printf("%d SHA-256 checks failed\n", failures);
		return 1;
	}
	printf("sha256: all checks passed\n");
	return 0;
}
