/*-------------------------------------------------------------------------
 *
 * access.c
 *	  Address keys: an inet key's stored form, a network counted as one
 *	  key (ipv4_prefix, ipv6_prefix), and the allow and deny lists of a
 *	  limit (rl_access), checked before its state.
 *
 * A key is an address when inet reads it as one host address, in any
 * spelling ('10.1.2.3', '010.1.2.3/32', '2001:DB8::1'), and an IPv4-mapped
 * IPv6 address ('::ffff:10.1.2.3') is its IPv4 address: an inet key is
 * stored in PostgreSQL's form of the address, and on a defined limit with
 * a prefix or list entries so is a text key, while a text key inet reads
 * as a network is refused there.  For every other call a text key is
 * text, and costs nothing more.  The lists are judged at the call's time
 * (ratelimit.now_override too) from every entry whose network holds the
 * call's own address, cached per backend (definitions.c); a prefix then
 * only decides which state the call counts in.  A call that waited for its
 * state judges its address again under the definition then in force
 * (rl_target_readdress).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/socket.h>

#include "utils/builtins.h"
#include "utils/inet.h"

#include "access.h"
#include "clock.h"
#include "definitions.h"
#include "target.h"

/* Longest text form of a host address, with room to spare. */
#define ADDRESS_TEXT_MAX 64

/* Whether a 16-byte IPv6 address is IPv4-mapped (::ffff:0:0/96). */
static bool
is_mapped(const unsigned char *addr)
{
	static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0xff, 0xff};

	return memcmp(addr, mapped, sizeof(mapped)) == 0;
}

/*
 * A host address in PostgreSQL's text form, an IPv4-mapped one as its
 * IPv4 address.
 */
static text *
address_text(int family, const unsigned char *addr)
{
	char		buf[ADDRESS_TEXT_MAX];

	if (family == PGSQL_AF_INET6 && is_mapped(addr))
	{
		family = PGSQL_AF_INET;
		addr += 12;
	}
	if (pg_inet_net_ntop(family, addr, family == PGSQL_AF_INET ? 32 : 128,
						 buf, sizeof(buf)) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("could not format inet value: %m")));
	return cstring_to_text(buf);
}

/*
 * The error for a key that is a network, not one address: an inet, or
 * (name not NULL) a text key of a limit that reads addresses.
 */
static void
refuse_network(int bits, text *name, text *key)
{
	if (name != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("rate limit key \"%s\" is a network, not a host address",
						text_to_cstring(key)),
				 errdetail("Rate limit \"%s\" has a prefix or allow and deny lists: a key that inet reads as an address counts as that address, and this one is a network of %d bits.",
						   text_to_cstring(name), bits),
				 errhint("Pass the caller's own address.")));
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("an inet rate limit key must be a host address"),
			 errdetail("The key has a netmask of %d bits.", bits),
			 errhint("Pass the caller's address; define the limit with ipv4_prefix or ipv6_prefix to count its network as one key.")));
}

/*
 * An inet key's text: the host address, as inet's output writes it
 * without /32 or /128, an IPv4-mapped one as its IPv4 address.  An inet
 * with a netmask is not one address, and is refused.
 */
text *
rl_inet_key(Datum value)
{
	inet	   *ip = DatumGetInetPP(value);

	if (ip_bits(ip) != ip_maxbits(ip))
		refuse_network(ip_bits(ip), NULL, NULL);
	return address_text(ip_family(ip), ip_addr(ip));
}

/*
 * A network of rl_allow, rl_deny or rl_unlist as the lists keep it: one
 * inside ::ffff:0:0/96 as its IPv4 network, as its addresses are keys.
 */
Datum
rl_access_net(Datum value)
{
	inet	   *ip = DatumGetInetPP(value);
	inet	   *v4;

	if (ip_family(ip) != PGSQL_AF_INET6 || ip_bits(ip) < 96 ||
		!is_mapped(ip_addr(ip)))
		return value;
	v4 = palloc0(sizeof(inet));
	ip_family(v4) = PGSQL_AF_INET;
	ip_bits(v4) = ip_bits(ip) - 96;
	memcpy(ip_addr(v4), ip_addr(ip) + 12, 4);
	SET_INET_VARSIZE(v4);
	return InetPGetDatum(v4);
}

/*
 * The key of limit name as an address, read as inet_in reads it: NULL
 * when it is not one; refused when it is a network.  *family and addr
 * receive the address, an IPv4-mapped one as IPv4.
 */
static text *
parse_address(text *name, text *key, int *family, unsigned char *addr)
{
	char	   *in = text_to_cstring(key);
	int			bits;

	*family = strchr(in, ':') ? PGSQL_AF_INET6 : PGSQL_AF_INET;
	bits = pg_inet_net_pton(*family, in, addr, -1);
	pfree(in);
	if (bits < 0 || bits > (*family == PGSQL_AF_INET ? 32 : 128))
		return NULL;
	if (bits != (*family == PGSQL_AF_INET ? 32 : 128))
		refuse_network(bits, name, key);
	if (*family == PGSQL_AF_INET6 && is_mapped(addr))
	{
		*family = PGSQL_AF_INET;
		memmove(addr, addr + 12, 4);
	}
	return address_text(*family, addr);
}

static RlAccess access_at(text *label, text *address, TimestampTz now,
						  bool *has_until, TimestampTz *until);

/*
 * Whether a policy looks at keys as addresses: a defined limit with a
 * prefix or list entries.
 */
static bool
reads_addresses(const RlTarget *target, const RlPolicy *p)
{
	return target->defined && !target->key_is_null &&
		(p->ipv4_prefix != 0 || p->ipv6_prefix != 0 || p->access_lists);
}

/*
 * The key an address counts under with the policy's prefix for its
 * family: the address, or its network ('10.1.2.0/24').  *prefix receives
 * the prefix (0: none).
 */
static text *
address_key(text *address, int family, unsigned char *addr,
			const RlPolicy *p, int *prefix)
{
	char		buf[ADDRESS_TEXT_MAX];
	int			maxbits = family == PGSQL_AF_INET ? 32 : 128;

	*prefix = family == PGSQL_AF_INET ? p->ipv4_prefix : p->ipv6_prefix;
	if (*prefix == 0 || *prefix == maxbits)
		return address;
	/* clear the host bits */
	for (int bit = *prefix; bit < maxbits; bit++)
		addr[bit / 8] &= ~(0x80 >> (bit % 8));
	if (pg_inet_net_ntop(family, addr, *prefix, buf, sizeof(buf)) == NULL)
		elog(ERROR, "could not format network of rate limit key");
	return cstring_to_text(buf);
}

/*
 * For a target of a defined limit with a prefix or lists, resolved: when
 * its key is an address, remember it (the lists judge it) and count the
 * call under it, or with a prefix for its family, in its network's state:
 * the key becomes the network ('10.1.2.0/24').
 */
void
rl_target_address(RlTarget *target)
{
	unsigned char addr[16];
	int			family;
	text	   *address;

	if (!reads_addresses(target, &target->policy) ||
		(address = parse_address(target->label, target->key, &family,
								 addr)) == NULL)
		return;
	target->address = address;
	target->key = address_key(address, family, addr, &target->policy,
							  &target->address_prefix);
}

/*
 * For a call that waited for its state (target.c's reread), with its
 * definition now current: its address judged under current, though the
 * call took its key as text before.  A key that now counts as another
 * (a prefix given or changed, an address respelt) fails with 40001: the
 * call holds the wrong state.  A deny now in force marks the target
 * denied, an allow allowed (store.c's rl_decide_held answers them).
 */
void
rl_target_readdress(RlTarget *target, const RlPolicy *current)
{
	unsigned char addr[16];
	int			family;
	int			prefix;
	text	   *address;
	text	   *key;
	RlAccess	access;

	target->allowed = target->denied = false;
	if (!reads_addresses(target, current))
		return;
	address = target->address;
	if (address != NULL)
		prefix = memchr(VARDATA_ANY(address), ':',
						VARSIZE_ANY_EXHDR(address)) != NULL ?
			current->ipv6_prefix : current->ipv4_prefix;
	/* a key taken as text, or a prefix changed: the key it counts under */
	if (address == NULL || prefix != target->address_prefix)
	{
		address = parse_address(target->label,
								address != NULL ? address : target->key,
								&family, addr);
		if (address == NULL)
			return;
		key = address_key(address, family, addr, current, &prefix);
		if (VARSIZE_ANY_EXHDR(key) != VARSIZE_ANY_EXHDR(target->key) ||
			memcmp(VARDATA_ANY(key), VARDATA_ANY(target->key),
				   VARSIZE_ANY_EXHDR(key)) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("rate limit \"%s\" was redefined while the call waited for its state",
							text_to_cstring(target->label)),
					 errdetail("The key its address counts under changed."),
					 errhint("Retry the transaction.")));
		target->address = address;
		target->address_prefix = prefix;
	}
	access = current->access_lists ?
		access_at(target->label, address, rl_clock_now(),
				  &target->deny_has_until, &target->deny_until) :
		RL_ACCESS_NONE;
	target->allowed = access == RL_ACCESS_ALLOW;
	target->denied = access == RL_ACCESS_DENY;
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
 * What the lists of limit label say of address at time now: the most
 * specific entry in force decides.  For a deny, *has_until and *until say
 * when the address stops being denied: when that entry expires, unless a
 * less specific deny is in force then, and so on (false: never).
 */
static RlAccess
access_at(text *label, text *address, TimestampTz now, bool *has_until,
		  TimestampTz *until)
{
	RlAccessEntry *entries;
	int			n;
	int			i;

	*has_until = false;
	*until = 0;
	n = rl_access_lookup(label, address, &entries);
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

/* access_at for the target's address, none when it has none or no lists. */
RlAccess
rl_access_of(RlTarget *target, TimestampTz now, bool *has_until,
			 TimestampTz *until)
{
	*has_until = false;
	*until = 0;
	if (target->address == NULL || !target->policy.access_lists)
		return RL_ACCESS_NONE;
	return access_at(target->label, target->address, now, has_until, until);
}
