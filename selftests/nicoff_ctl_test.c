// SPDX-License-Identifier: GPL-2.0
/*
 * nicoffctl(8) against the loaded module: the kernel's extended-ack
 * messages reach the user with the exit status the man page documents, the
 * faults in force are shown, and -j prints JSON (parsed here with json-c)
 * naming every counter of include/uapi/nicoff_lists.h; set-card sets a
 * card's bcast_hw, which GET_CARD reports and the module's tunable resets.  The tool is
 * $NICOFFCTL, else nicoffctl on $PATH (the VM harness copies it to /bin).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <json-c/json.h>

#include "kselftest_harness.h"
#include "nicoff_util.h"
#include "nicoff_nl.h"

/* What one run of nicoffctl printed, and its exit status. */
struct ctl_run {
	int status;
	char out[65536];
	char err[4096];
};

static void slurp(FILE *f, char *buf, size_t len)
{
	size_t n;

	rewind(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/* Runs nicoffctl with the NULL-terminated argv tail; -1 if it could not. */
static int ctl(struct ctl_run *r, const char *const *args)
{
	const char *tool = getenv("NICOFFCTL") ? getenv("NICOFFCTL") : "nicoffctl";
	const char *argv[16] = { tool };
	FILE *out = tmpfile(), *err = tmpfile();
	int i, st;
	pid_t pid;

	for (i = 0; args[i] && i < 14; i++)
		argv[i + 1] = args[i];
	if (!out || !err)
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		dup2(fileno(out), 1);
		dup2(fileno(err), 2);
		execvp(tool, (char *const *)argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	r->status = WEXITSTATUS(st);
	slurp(out, r->out, sizeof(r->out));
	slurp(err, r->err, sizeof(r->err));
	return 0;
}

#define CTL(r, ...) ctl(r, (const char *const[]){ __VA_ARGS__, NULL })

/* The JSON nicoffctl printed, parsed by json-c (NULL if it is not JSON). */
static struct json_object *ctl_json(struct ctl_run *r)
{
	enum json_tokener_error e;

	return json_tokener_parse_verbose(r->out, &e);
}

static long long json_path_int(struct json_object *o, const char *k1, const char *k2)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, k1, &o) || !json_object_object_get_ex(o, k2, &v))
		return -1;
	return json_object_get_int64(v);
}

FIXTURE(ctl) {
	struct ctl_run r;
	struct nicoff_query q;
	long long delay_us;	/* the global delay_us to put back, or -1 */
	bool bcast_hw_set;	/* put every card's bcast_hw back to 1 */
};

FIXTURE_SETUP(ctl)
{
	self->delay_us = -1;
	ASSERT_EQ(0, nt_query_card(0, &self->q));
	if (CTL(&self->r, "--version") || self->r.status == 127)
		SKIP(return, "nicoffctl not found (set NICOFFCTL)");
}

/* A failed check must not leave its faults to the tests after it. */
FIXTURE_TEARDOWN(ctl)
{
	char prev[64];

	if (self->bcast_hw_set)
		nt_param_set("bcast_hw", 1);
	if (self->delay_us < 0)
		return;
	snprintf(prev, sizeof(prev), "delay_us=%lld", self->delay_us);
	CTL(&self->r, "faults", prev);
	CTL(&self->r, "faults", "--card", "0", "--global");
}

TEST_F(ctl, help_version_usage)
{
	ASSERT_EQ(0, CTL(&self->r, "--help"));
	EXPECT_EQ(0, self->r.status);
	EXPECT_NE(NULL, strstr(self->r.out, "Exit status"));
	ASSERT_EQ(0, CTL(&self->r, "-V"));
	EXPECT_EQ(0, self->r.status);
	EXPECT_EQ(0, strncmp(self->r.out, "nicoffctl ", 10)) TH_LOG("%s", self->r.out);
	ASSERT_EQ(0, CTL(&self->r, "no-such-command"));
	EXPECT_EQ(2, self->r.status);
	ASSERT_EQ(0, CTL(&self->r, "faults", "nofault=1"));
	EXPECT_EQ(2, self->r.status);
}

/* The kernel's NL_SET_ERR_MSG text, not only an errno string. */
TEST_F(ctl, no_such_card)
{
	char card[16];

	snprintf(card, sizeof(card), "%u", self->q.num_cards > 99 ? self->q.num_cards : 99);
	ASSERT_EQ(0, CTL(&self->r, "card", card));
	EXPECT_EQ(1, self->r.status);
	EXPECT_NE(NULL, strstr(self->r.err, "no such card")) TH_LOG("stderr: %s", self->r.err);
	EXPECT_EQ('\0', self->r.out[0]);
}

/* The policy's range, from NLMSGERR_ATTR_POLICY, and the attribute's name. */
TEST_F(ctl, out_of_range)
{
	ASSERT_EQ(0, CTL(&self->r, "faults", "drop=2000000"));
	EXPECT_EQ(1, self->r.status);
	EXPECT_NE(NULL, strstr(self->r.err, "0..1000000")) TH_LOG("stderr: %s", self->r.err);
	EXPECT_NE(NULL, strstr(self->r.err, "drop")) TH_LOG("stderr: %s", self->r.err);
}

/* `faults` shows the global faults and a card's own once it has them. */
TEST_F(ctl, faults_shown)
{
	struct json_object *j, *cards, *c;
	long long delay_us, own = -1;
	char prev[32];
	size_t i;

	ASSERT_EQ(0, CTL(&self->r, "faults", "-j"));
	ASSERT_EQ(0, self->r.status);
	j = ctl_json(&self->r);
	ASSERT_NE(NULL, j) TH_LOG("not JSON: %s", self->r.out);
	delay_us = json_path_int(j, "global", "delay_us");
	json_object_put(j);
	ASSERT_LE(0, delay_us);
	self->delay_us = delay_us;

	ASSERT_EQ(0, CTL(&self->r, "faults", "delay_us=123"));
	ASSERT_EQ(0, self->r.status) TH_LOG("stderr: %s", self->r.err);
	ASSERT_EQ(0, CTL(&self->r, "faults", "--card", "0", "drop=1234"));
	ASSERT_EQ(0, self->r.status) TH_LOG("stderr: %s", self->r.err);

	ASSERT_EQ(0, CTL(&self->r, "faults"));
	EXPECT_EQ(0, self->r.status);
	EXPECT_NE(NULL, strstr(self->r.out, "delay_us=123")) TH_LOG("%s", self->r.out);
	EXPECT_NE(NULL, strstr(self->r.out, "card 0:")) TH_LOG("%s", self->r.out);
	EXPECT_NE(NULL, strstr(self->r.out, "drop=1234")) TH_LOG("%s", self->r.out);

	ASSERT_EQ(0, CTL(&self->r, "faults", "--json"));
	j = ctl_json(&self->r);
	EXPECT_NE(NULL, j) TH_LOG("not JSON: %s", self->r.out);
	if (j) {
		EXPECT_EQ(123, json_path_int(j, "global", "delay_us"));
		if (json_object_object_get_ex(j, "cards", &cards))
			for (i = 0; i < json_object_array_length(cards); i++) {
				c = json_object_array_get_idx(cards, i);
				if (json_path_int(c, "faults", "drop") >= 0 &&
				    json_object_get_int(json_object_object_get(c, "card")) == 0)
					own = json_path_int(c, "faults", "drop");
			}
		EXPECT_EQ(1234, own);
		json_object_put(j);
	}

	snprintf(prev, sizeof(prev), "delay_us=%lld", delay_us);
	EXPECT_EQ(0, CTL(&self->r, "faults", prev));
	EXPECT_EQ(0, self->r.status);
	EXPECT_EQ(0, CTL(&self->r, "faults", "--card", "0", "--global"));
	EXPECT_EQ(0, self->r.status);
	ASSERT_EQ(0, CTL(&self->r, "faults"));
	EXPECT_EQ(NULL, strstr(self->r.out, "card 0:")) TH_LOG("%s", self->r.out);
}

/* card N's bcast_hw as -j card N shows it, or -1. */
static long long card_bcast_hw(struct ctl_run *r, const char *card)
{
	struct json_object *j, *v;
	long long hw = -1;

	if (CTL(r, "-j", "card", card) || r->status)
		return -1;
	j = ctl_json(r);
	if (j && json_object_object_get_ex(j, "bcast_hw", &v))
		hw = json_object_get_int64(v);
	json_object_put(j);
	return hw;
}

/* SET_CARD as an ordinary user (uid 65534): refused with EPERM. */
static int set_card_unprivileged(void)
{
	struct nt_nl nl;
	int ret;

	NT_CK(!setgid(65534) && !setuid(65534));
	NT_CK(!nt_nl_connect(&nl));
	ret = nt_nl_card_set_bcast_hw(&nl, 0, 0);
	nt_nl_close(&nl);
	NT_CK(ret == -EPERM);
	return 0;
}

/*
 * The kernel refuses a bad set-card with its own words; a good one is read
 * back by card N (text and JSON) and only on that card; the module's
 * bcast_hw tunable sets every card again.
 */
TEST_F(ctl, set_card_bcast_hw)
{
	struct nt_card_stats st;
	unsigned long v;
	struct nt_nl nl;
	char last[16];

	ASSERT_EQ(0, nt_param_get("bcast_hw", &v));
	ASSERT_EQ(1ul, v);
	EXPECT_EQ(1, card_bcast_hw(&self->r, "0"));
	snprintf(last, sizeof(last), "%u", self->q.num_cards - 1);

	ASSERT_EQ(0, CTL(&self->r, "set-card", "0", "bcast_hw=2"));
	EXPECT_EQ(1, self->r.status);
	EXPECT_NE(NULL, strstr(self->r.err, "0..1")) TH_LOG("stderr: %s", self->r.err);
	EXPECT_NE(NULL, strstr(self->r.err, "bcast_hw")) TH_LOG("stderr: %s", self->r.err);
	ASSERT_EQ(0, CTL(&self->r, "set-card", "99999", "bcast_hw=0"));
	EXPECT_EQ(1, self->r.status);
	EXPECT_NE(NULL, strstr(self->r.err, "no such card")) TH_LOG("stderr: %s", self->r.err);
	ASSERT_EQ(0, CTL(&self->r, "set-card", "0"));
	EXPECT_EQ(1, self->r.status);
	EXPECT_NE(NULL, strstr(self->r.err, "nothing to set")) TH_LOG("stderr: %s", self->r.err);
	ASSERT_EQ(0, CTL(&self->r, "set-card", "0", "bcast=0"));
	EXPECT_EQ(2, self->r.status);
	EXPECT_EQ(1, card_bcast_hw(&self->r, "0"));
	EXPECT_EQ(0, nt_run_child(set_card_unprivileged));
	/* The raw errors behind the messages: the policy's range, the card. */
	ASSERT_EQ(0, nt_nl_connect(&nl));
	EXPECT_EQ(-ERANGE, nt_nl_card_set_bcast_hw(&nl, 0, 2));
	EXPECT_EQ(-ERANGE, nt_nl_card_set_bcast_hw(&nl, 0, ~0u));
	EXPECT_EQ(-ENODEV, nt_nl_card_set_bcast_hw(&nl, self->q.num_cards, 0));
	EXPECT_EQ(0, nt_nl_card(&nl, 0, &st));
	EXPECT_EQ(1, st.bcast_hw);
	nt_nl_close(&nl);
	EXPECT_EQ(1, card_bcast_hw(&self->r, "0"));

	self->bcast_hw_set = true;
	ASSERT_EQ(0, CTL(&self->r, "set-card", last, "bcast_hw=0"));
	ASSERT_EQ(0, self->r.status) TH_LOG("stderr: %s", self->r.err);
	EXPECT_EQ(0, card_bcast_hw(&self->r, last));
	if (self->q.num_cards > 1)
		EXPECT_EQ(1, card_bcast_hw(&self->r, "0"));
	ASSERT_EQ(0, CTL(&self->r, "card", last));
	EXPECT_NE(NULL, strstr(self->r.out, "bcast_hw 0")) TH_LOG("%s", self->r.out);
	ASSERT_EQ(0, CTL(&self->r, "set-card", last, "bcast_hw=1"));
	EXPECT_EQ(0, self->r.status);
	EXPECT_EQ(1, card_bcast_hw(&self->r, last));

	/* The tunable: every card, and refused out of its range. */
	ASSERT_EQ(0, CTL(&self->r, "set-card", last, "bcast_hw=0"));
	ASSERT_EQ(0, nt_param_set("bcast_hw", 0));
	EXPECT_EQ(0, card_bcast_hw(&self->r, "0"));
	ASSERT_EQ(0, nt_param_set("bcast_hw", 1));
	EXPECT_EQ(1, card_bcast_hw(&self->r, "0"));
	EXPECT_EQ(1, card_bcast_hw(&self->r, last));
	EXPECT_NE(0, nt_param_set("bcast_hw", 2));
	ASSERT_EQ(0, nt_param_get("bcast_hw", &v));
	EXPECT_EQ(1ul, v);
}

/* The default channels tunable takes 2-64 only. */
TEST_F(ctl, bcast_channels_tunable)
{
	unsigned long v;

	ASSERT_EQ(0, nt_param_get("bcast_channels", &v));
	EXPECT_EQ(16ul, v);
	EXPECT_NE(0, nt_param_set("bcast_channels", 1));
	EXPECT_NE(0, nt_param_set("bcast_channels", 65));
	EXPECT_EQ(0, nt_param_set("bcast_channels", 2));
	EXPECT_EQ(0, nt_param_set("bcast_channels", 64));
	ASSERT_EQ(0, nt_param_get("bcast_channels", &v));
	EXPECT_EQ(64ul, v);
	EXPECT_EQ(0, nt_param_set("bcast_channels", 16));
}

static const char *const counters[] = {
#define NICOFF_NL_STAT_FW(attr, name) #name,
#define NICOFF_NL_STAT_HOST(attr, name) #name,
#include <uapi/nicoff_lists.h>
#undef NICOFF_NL_STAT_FW
#undef NICOFF_NL_STAT_HOST
};

/* Every card, every counter of the one list, as numbers. */
TEST_F(ctl, cards_json)
{
	static const char *const cmds[] = { "cards", "stats" };
	struct json_object *j, *c, *stats, *v;
	size_t i, k, m;

	for (m = 0; m < 2; m++) {
		ASSERT_EQ(0, CTL(&self->r, "-j", "-p", cmds[m]));
		ASSERT_EQ(0, self->r.status) TH_LOG("stderr: %s", self->r.err);
		j = ctl_json(&self->r);
		ASSERT_NE(NULL, j) TH_LOG("%s -j: not JSON: %.200s", cmds[m], self->r.out);
		ASSERT_TRUE(json_object_is_type(j, json_type_array));
		EXPECT_EQ(self->q.num_cards, json_object_array_length(j));
		for (i = 0; i < json_object_array_length(j); i++) {
			c = json_object_array_get_idx(j, i);
			EXPECT_EQ(i, json_object_get_int(json_object_object_get(c, "card")));
			ASSERT_TRUE(json_object_object_get_ex(c, "stats", &stats));
			for (k = 0; k < sizeof(counters) / sizeof(counters[0]); k++) {
				EXPECT_TRUE(json_object_object_get_ex(stats, counters[k], &v))
					TH_LOG("%s: card %zu has no %s", cmds[m], i, counters[k]);
			}
		}
		json_object_put(j);
	}
	ASSERT_EQ(0, CTL(&self->r, "info", "--json"));
	j = ctl_json(&self->r);
	ASSERT_NE(NULL, j) TH_LOG("info -j: not JSON: %s", self->r.out);
	EXPECT_EQ(self->q.num_cards, json_object_get_int(json_object_object_get(j, "cards")));
	json_object_put(j);
}

TEST_HARNESS_MAIN
