/*-------------------------------------------------------------------------
 *
 * access.c
 *	  Address keys: an inet key's stored form, a network counted as one
 *	  key (ipv4_prefix, ipv6_prefix), and the allow and deny lists of a
 *	  limit (rl_access), checked before its state.
 *
 * A key is an address when it is a host address written as PostgreSQL
 * writes an inet ('10.1.2.3', '2001:db8::1'): an inet key, which is stored
 * in that form, or a text key already in it.  Only a defined limit with a
 * prefix or list entries looks at that; for every other call a key is
 * text, and costs nothing more.  The lists are judged at the call's time
 * (ratelimit.now_override too) from every entry whose network holds the
 * call's own address, cached per backend (definitions.c); a prefix then
 * only decides which state the call counts in.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/socket.h>

#include "utils/builtins.h"
#include "utils/inet.h"

#include "access.h"
#include "definitions.h"
#include "target.h"

/* Longest text form of a host address, with room to spare. */
#define ADDRESS_TEXT_MAX 64

/*
 * An inet key's text: the host address, as inet's output writes it
 * without /32 or /128.  An inet with a netmask is not one address, and
 * is refused.
 */
text *
rl_inet_key(Datum value)
{
	inet	   *ip = DatumGetInetPP(value);
	char		buf[ADDRESS_TEXT_MAX];

	if (ip_bits(ip) != ip_maxbits(ip))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("an inet rate limit key must be a host address"),
				 errdetail("The key has a netmask of %d bits.", ip_bits(ip)),
				 errhint("Pass the caller's address; define the limit with ipv4_prefix or ipv6_prefix to count its network as one key.")));
	if (pg_inet_net_ntop(ip_family(ip), ip_addr(ip), ip_bits(ip),
						 buf, sizeof(buf)) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("could not format inet value: %m")));
	return cstring_to_text(buf);
}

/*
 * Whether key is a host address in PostgreSQL's form: its family, bits
 * and bytes into family and addr.
 */
static bool
parse_address(text *key, int *family, unsigned char *addr)
{
	int			len = VARSIZE_ANY_EXHDR(key);
	char		in[ADDRESS_TEXT_MAX];
	char		out[ADDRESS_TEXT_MAX];
	int			bits;

	if (len >= ADDRESS_TEXT_MAX)
		return false;
	memcpy(in, VARDATA_ANY(key), len);
	in[len] = '\0';
	*family = strchr(in, ':') ? PGSQL_AF_INET6 : PGSQL_AF_INET;
	bits = pg_inet_net_pton(*family, in, addr, -1);
	if (bits != (*family == PGSQL_AF_INET ? 32 : 128))
		return false;
	/* the same text back: '1' or '010.1.2.3' stay text keys */
	return pg_inet_net_ntop(*family, addr, bits, out, sizeof(out)) != NULL &&
		strcmp(in, out) == 0;
}

/*
 * For a target of a defined limit with a prefix or lists, resolved: when
 * its key is an address, remember it (the lists judge it), and with a
 * prefix for its family, count the call in its network's state: the key
 * becomes the network ('10.1.2.0/24').
 */
void
rl_target_address(RlTarget *target)
{
	const RlPolicy *p = &target->policy;
	unsigned char addr[16];
	char		buf[ADDRESS_TEXT_MAX];
	int			family;
	int			prefix;
	int			maxbits;

	if (!target->defined || target->key_is_null ||
		(p->ipv4_prefix == 0 && p->ipv6_prefix == 0 && !p->access_lists) ||
		!parse_address(target->key, &family, addr))
		return;
	target->address = target->key;
	maxbits = family == PGSQL_AF_INET ? 32 : 128;
	prefix = family == PGSQL_AF_INET ? p->ipv4_prefix : p->ipv6_prefix;
	target->address_prefix = prefix;
	if (prefix == 0 || prefix == maxbits)
		return;
	/* clear the host bits */
	for (int bit = prefix; bit < maxbits; bit++)
		addr[bit / 8] &= ~(0x80 >> (bit % 8));
	if (pg_inet_net_ntop(family, addr, prefix, buf, sizeof(buf)) == NULL)
		elog(ERROR, "could not format network of rate limit key");
	target->key = cstring_to_text(buf);
}

/* The first entry in force at time t, or -1. */
static int
in_force(const RlAccessEntry *entries, int n, TimestampTz t)
{
	for (int i = 0; i < n; i++)
		if (!entries[i].expires || entries[i].expires_at > t)
			return i;
	return -1;
}

/*
 * What the lists of the target's limit say of its address at time now:
 * the most specific entry in force decides.  For a deny, *has_until and
 * *until say when the address stops being denied: when that entry
 * expires, unless a less specific deny is in force then, and so on
 * (false: never).
 */
RlAccess
rl_access_of(RlTarget *target, TimestampTz now, bool *has_until,
			 TimestampTz *until)
{
	RlAccessEntry *entries;
	int			n;
	int			i;

	*has_until = false;
	*until = 0;
	if (target->address == NULL || !target->policy.access_lists)
		return RL_ACCESS_NONE;
	n = rl_access_lookup(target->label, target->address, &entries);
	i = in_force(entries, n, now);
	if (i < 0)
		return RL_ACCESS_NONE;
	if (!entries[i].deny)
		return RL_ACCESS_ALLOW;
	/* each step starts later, at an expiry: ends within n steps */
	while (i >= 0 && entries[i].deny && entries[i].expires)
	{
		*until = entries[i].expires_at;
		i = in_force(entries, n, *until);
	}
	*has_until = i < 0 || !entries[i].deny;
	return RL_ACCESS_DENY;
}
