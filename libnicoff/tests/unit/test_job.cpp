// nicoff::Job and its C API without a card: the rank -> (card, port)
// mapping, the environment of nicoffrun and of the MPI launchers, the
// fallbacks and the errors.  Every test starts from an environment without
// any of the variables a Job reads.
#include <nicoff/nicoff.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <system_error>
#include <utility>

#include "test_errors.hpp"

// Last: cmocka's macros (fail, ...) clash with the standard headers.
#include "cmocka.hpp"

namespace {

constexpr const char *job_vars[] = {
    "NICOFF_RANK",
    "NICOFF_SIZE",
    "NICOFF_JOB_ID",
    "NICOFF_NICS",
    "NICOFF_PORT_BASE",
    "NICOFF_CARD",
    "NICOFF_PORT",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "PMI_RANK",
    "PMI_SIZE",
    "PMI_FD",
    "NICOFF_PMI_TIMEOUT",
    "PMIX_RANK",
    "PMIX_NAMESPACE",
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "SLURM_JOB_ID",
    "MV2_COMM_WORLD_RANK",
    "MV2_COMM_WORLD_SIZE",
    "OMPI_MCA_orte_ess_jobid",
    "MPI_LOCALNRANKS",
    "OMPI_COMM_WORLD_LOCAL_SIZE",
    "MV2_COMM_WORLD_LOCAL_SIZE",
    "SLURM_NNODES",
};

int clear_env(void **) {
    for (const char *v : job_vars)
        unsetenv(v);
    return 0;
}

void set(const char *name, const char *value) { assert_int_equal(setenv(name, value, 1), 0); }

// What K is when nothing says: the cards of /dev/nicoff0, else the size.
std::uint32_t default_nics(std::uint32_t size) {
    const auto info = nicoff::Job::query_device();
    return info && info->num_cards ? info->num_cards : size;
}

using nicoff::test::error_of;

// from_env() must fail with EINVAL and a message that names `mentions`.
void expect_env_error(const char *mentions) {
    std::string what;
    assert_int_equal(error_of([] { (void)nicoff::Job::from_env(); }, &what), EINVAL);
    if (!std::strstr(what.c_str(), mentions))
        fail_msg("message '%s' does not mention '%s'", what.c_str(), mentions);
}

// --- the mapping -------------------------------------------------------------

void test_placement(void **) {
    // Round-robin over the cards first, then the next port.
    struct {
        std::uint32_t rank, nics, base, card, port;
    } cases[] = {
        {0, 3, 16, 0, 16}, {1, 3, 16, 1, 16},          {2, 3, 16, 2, 16}, {3, 3, 16, 0, 17},
        {7, 3, 16, 1, 18}, {5, 1, 16, 0, 21},          {5, 8, 16, 5, 16}, {9, 8, 0, 1, 1},
        {0, 1, 0, 0, 0},   {1000, 7, 20, 6, 20 + 142},
    };
    for (const auto &c : cases) {
        const nicoff::Placement p = nicoff::job_placement(c.rank, c.nics, c.base);
        if (p.card != c.card || p.port != c.port)
            fail_msg("rank %u over %u cards from %u: got (%u, %u), want (%u, %u)", c.rank, c.nics,
                     c.base, p.card, p.port, c.card, c.port);
    }
    // Usable at compile time.
    static_assert(nicoff::job_placement(10, 4, 16) == nicoff::Placement{2, 18});
    assert_int_equal(error_of([] { (void)nicoff::job_placement(1, 0, 16); }), EINVAL);
    // The port may not leave [0, 2^31).
    assert_int_equal(nicoff::job_placement(0, 1, nicoff::job_value_max).port,
                     nicoff::job_value_max);
    assert_int_equal(error_of([] { (void)nicoff::job_placement(1, 1, nicoff::job_value_max); }),
                     EINVAL);
    assert_int_equal(error_of([] { (void)nicoff::job_placement(0xffffffffu, 1, 0); }), EINVAL);
}

void test_job_mapping(void **) {
    // Every rank of a job gets a (card, port) of its own, within K cards
    // and P..P + ceil(N / K) - 1, and the Job says what job_placement says.
    for (std::uint32_t nics : {1u, 2u, 3u, 7u, 8u, 64u}) {
        const std::uint32_t size = 100;
        const nicoff::Job job(0, size, nics, 20);
        std::set<std::pair<std::uint32_t, std::uint32_t>> seen;
        for (std::uint32_t r = 0; r < size; r++) {
            const nicoff::Placement p = job.placement_of(r);
            assert_true(p == nicoff::job_placement(r, nics, 20));
            assert_int_equal(job.card_of(r), p.card);
            assert_int_equal(job.port_of(r), p.port);
            assert_true(p.card < nics);
            assert_true(p.port >= 20 && p.port < 20 + (size + nics - 1) / nics);
            assert_true(seen.emplace(p.card, p.port).second);
        }
        assert_int_equal(error_of([&] { (void)job.card_of(size); }), EINVAL);
        assert_int_equal(error_of([&] { (void)job.port_of(size); }), EINVAL);
    }
    const nicoff::Job job(5, 8, 3, 16, "j");
    assert_int_equal(job.card(), 2);
    assert_int_equal(job.port(), 17);
    assert_string_equal(job.id().c_str(), "j");
    assert_string_equal(job.source().c_str(), "");
}

void test_job_bad_values(void **) {
    assert_int_equal(error_of([] { nicoff::Job(0, 0, 1); }), EINVAL);           // size 0
    assert_int_equal(error_of([] { nicoff::Job(4, 4, 1); }), EINVAL);           // rank == size
    assert_int_equal(error_of([] { nicoff::Job(0, 4, 0); }), EINVAL);           // no card
    assert_int_equal(error_of([] { nicoff::Job(0, 0x80000000u, 1); }), EINVAL); // size >= 2^31
    // The last rank's port would be 2^31.
    assert_int_equal(error_of([] { nicoff::Job(0, 2, 1, nicoff::job_value_max); }), EINVAL);
    assert_int_equal(error_of([] { nicoff::Job(0, 2, 2, nicoff::job_value_max); }), 0);
}

// --- the environment ----------------------------------------------------------

void test_env_none(void **) {
    // No launcher at all: a single-process job.
    const nicoff::Job job = nicoff::Job::from_env();
    assert_int_equal(job.rank(), 0);
    assert_int_equal(job.size(), 1);
    assert_int_equal(job.nics(), default_nics(1));
    assert_int_equal(job.port_base(), 16);
    assert_int_equal(job.port(), 16);
    assert_int_equal(job.card(), 0);
    assert_string_equal(job.id().c_str(), "");
    assert_string_equal(job.source().c_str(), "");
}

void test_env_nicoffrun(void **) {
    set("NICOFF_RANK", "5");
    set("NICOFF_SIZE", "8");
    set("NICOFF_NICS", "3");
    set("NICOFF_PORT_BASE", "20");
    set("NICOFF_JOB_ID", "job-42");
    // NICOFF_* wins over every MPI variable.
    set("OMPI_COMM_WORLD_RANK", "1");
    set("OMPI_COMM_WORLD_SIZE", "2");
    set("SLURM_JOB_ID", "777");
    nicoff::Job job = nicoff::Job::from_env();
    assert_int_equal(job.rank(), 5);
    assert_int_equal(job.size(), 8);
    assert_int_equal(job.nics(), 3);
    assert_int_equal(job.port_base(), 20);
    assert_string_equal(job.id().c_str(), "job-42");
    assert_string_equal(job.source().c_str(), "NICOFF_RANK");
    assert_int_equal(job.card(), 2);
    assert_int_equal(job.port(), 21);
    // What nicoffrun also exports must agree.
    set("NICOFF_CARD", "2");
    set("NICOFF_PORT", "21");
    job = nicoff::Job::from_env();
    assert_int_equal(job.port(), 21);
    set("NICOFF_CARD", "1");
    expect_env_error("NICOFF_CARD");
    set("NICOFF_CARD", "2");
    set("NICOFF_PORT", "16");
    expect_env_error("NICOFF_PORT");
    // Leading zeros are still decimal.
    unsetenv("NICOFF_CARD");
    unsetenv("NICOFF_PORT");
    set("NICOFF_RANK", "007");
    assert_int_equal(nicoff::Job::from_env().rank(), 7);
}

void test_env_nicoffrun_defaults(void **) {
    // Only rank and size: K from the device (or the size), P = 16, no id.
    set("NICOFF_RANK", "2");
    set("NICOFF_SIZE", "4");
    const nicoff::Job job = nicoff::Job::from_env();
    assert_int_equal(job.nics(), default_nics(4));
    assert_int_equal(job.port_base(), 16);
    assert_string_equal(job.id().c_str(), "");
    assert_true(job.placement_of(2) == nicoff::job_placement(2, default_nics(4), 16));
}

struct FallbackCase {
    const char *rank_var, *rank, *size_var, *size;
    const char *id_var, *id;
};

void test_env_mpi_fallbacks(void **state) {
    const FallbackCase cases[] = {
        {"OMPI_COMM_WORLD_RANK", "3", "OMPI_COMM_WORLD_SIZE", "4", "OMPI_MCA_orte_ess_jobid",
         "1234567"},
        {"PMI_RANK", "1", "PMI_SIZE", "2", nullptr, ""},
        {"PMIX_RANK", "6", "SLURM_NTASKS", "7", "PMIX_NAMESPACE", "slurm.pmix.1.0"},
        {"PMIX_RANK", "2", "OMPI_COMM_WORLD_SIZE", "3", "PMIX_NAMESPACE", "prterun-x-1@1"},
        {"SLURM_PROCID", "9", "SLURM_NTASKS", "10", "SLURM_JOB_ID", "4242"},
        {"MV2_COMM_WORLD_RANK", "0", "MV2_COMM_WORLD_SIZE", "5", nullptr, ""},
    };
    for (const FallbackCase &c : cases) {
        clear_env(state);
        set(c.rank_var, c.rank);
        set(c.size_var, c.size);
        if (c.id_var)
            set(c.id_var, c.id);
        const nicoff::Job job = nicoff::Job::from_env();
        const auto rank = static_cast<std::uint32_t>(std::atoi(c.rank));
        const auto size = static_cast<std::uint32_t>(std::atoi(c.size));
        if (job.rank() != rank || job.size() != size)
            fail_msg("%s=%s %s=%s: got rank %u of %u", c.rank_var, c.rank, c.size_var, c.size,
                     job.rank(), job.size());
        assert_string_equal(job.source().c_str(), c.rank_var);
        assert_string_equal(job.id().c_str(), c.id);
        assert_int_equal(job.nics(), default_nics(size));
        assert_int_equal(job.port_base(), 16);
        assert_true(job.placement_of(rank) == nicoff::job_placement(rank, default_nics(size), 16));
        // The NICOFF_ variables still apply one by one.
        set("NICOFF_NICS", "2");
        set("NICOFF_PORT_BASE", "40");
        set("NICOFF_JOB_ID", "mine");
        const nicoff::Job mixed = nicoff::Job::from_env();
        assert_int_equal(mixed.rank(), rank);
        assert_int_equal(mixed.card(), rank % 2);
        assert_int_equal(mixed.port(), 40 + rank / 2);
        assert_string_equal(mixed.id().c_str(), "mine");
    }
    // Precedence among the MPI launchers: Open MPI over PMI over Slurm.
    clear_env(state);
    set("SLURM_PROCID", "0");
    set("SLURM_NTASKS", "1");
    set("PMI_RANK", "1");
    set("PMI_SIZE", "3");
    assert_int_equal(nicoff::Job::from_env().rank(), 1);
    set("OMPI_COMM_WORLD_RANK", "2");
    set("OMPI_COMM_WORLD_SIZE", "3");
    assert_int_equal(nicoff::Job::from_env().rank(), 2);
    // Job ids: SLURM_JOB_ID before PMIX_NAMESPACE.
    set("PMIX_NAMESPACE", "ns");
    set("SLURM_JOB_ID", "99");
    assert_string_equal(nicoff::Job::from_env().id().c_str(), "99");
}

void test_env_errors(void **state) {
    const char *not_numbers[] = {"",   "abc",  "-1",         "+1",          " 1", "1 ",
                                 "1x", "0x10", "2147483648", "99999999999", "1.0"};
    for (const char *bad : not_numbers) {
        for (const char *var : {"NICOFF_RANK", "NICOFF_SIZE", "NICOFF_NICS", "NICOFF_PORT_BASE",
                                "NICOFF_CARD", "NICOFF_PORT"}) {
            clear_env(state);
            set("NICOFF_RANK", "0");
            set("NICOFF_SIZE", "2");
            set(var, bad);
            expect_env_error(var);
        }
        clear_env(state);
        set("PMI_RANK", bad);
        set("PMI_SIZE", "4");
        expect_env_error("PMI_RANK");
    }
    clear_env(state);
    set("NICOFF_RANK", "4");
    set("NICOFF_SIZE", "4");
    expect_env_error("not below");
    set("NICOFF_SIZE", "0");
    expect_env_error("NICOFF_SIZE=0");
    set("NICOFF_SIZE", "8");
    set("NICOFF_NICS", "0");
    expect_env_error("NICOFF_NICS=0");
    unsetenv("NICOFF_NICS");
    set("NICOFF_PORT_BASE", "2147483647"); // rank 7's port overflows
    set("NICOFF_NICS", "1");
    expect_env_error("port");
    // One half of a pair.
    clear_env(state);
    set("NICOFF_RANK", "0");
    expect_env_error("NICOFF_SIZE");
    clear_env(state);
    set("NICOFF_SIZE", "2");
    expect_env_error("NICOFF_RANK");
    clear_env(state);
    set("PMI_RANK", "0");
    set("SLURM_NTASKS", "4"); // another launcher's size does not count
    expect_env_error("PMI_SIZE");
    clear_env(state);
    set("PMIX_RANK", "0");
    expect_env_error("SLURM_NTASKS or OMPI_COMM_WORLD_SIZE");
    clear_env(state);
    set("OMPI_COMM_WORLD_RANK", "5");
    set("OMPI_COMM_WORLD_SIZE", "5");
    expect_env_error("OMPI_COMM_WORLD_RANK=5 is not below OMPI_COMM_WORLD_SIZE=5");
}

void test_open_port_without_device(void **) {
    // The host has no /dev/nicoff*: opening this rank's port names its card.
    if (nicoff::Job::query_device())
        skip();
    set("NICOFF_RANK", "3");
    set("NICOFF_SIZE", "4");
    set("NICOFF_NICS", "2");
    const nicoff::Job job = nicoff::Job::from_env();
    std::string what;
    assert_int_equal(error_of([&] { (void)job.open_port(); }, &what), ENOENT);
    assert_non_null(std::strstr(what.c_str(), "/dev/nicoff1"));
}

// --- the C API -------------------------------------------------------------------

void test_capi(void **state) {
    nicoff_job *job = nullptr;
    char msg[256];
    set("NICOFF_RANK", "4");
    set("NICOFF_SIZE", "6");
    set("NICOFF_NICS", "4");
    set("NICOFF_PORT_BASE", "30");
    set("NICOFF_JOB_ID", "cjob");
    assert_int_equal(nicoff_job_from_env(&job, msg, sizeof(msg)), 0);
    assert_non_null(job);
    assert_string_equal(msg, "");
    assert_int_equal(nicoff_job_rank(job), 4);
    assert_int_equal(nicoff_job_size(job), 6);
    assert_int_equal(nicoff_job_nics(job), 4);
    assert_int_equal(nicoff_job_port_base(job), 30);
    assert_string_equal(nicoff_job_id(job), "cjob");
    for (int r = 0; r < 6; r++) {
        assert_int_equal(nicoff_job_card_of(job, r), r % 4);
        assert_int_equal(nicoff_job_port_of(job, r), 30 + r / 4);
    }
    assert_int_equal(nicoff_job_card_of(job, 6), -EINVAL);
    assert_int_equal(nicoff_job_port_of(job, -1), -EINVAL);
    nicoff_port *port = reinterpret_cast<nicoff_port *>(0x99);
    const struct nicoff_port_attr bad_attr = {NICOFF_PORT_ANY, 64, 64, 1};
    assert_int_equal(nicoff_job_open_port(job, &bad_attr, &port), -EINVAL);
    assert_int_equal(nicoff_job_open_port(job, nullptr, nullptr), -EINVAL);
    if (!nicoff::Job::query_device())
        assert_int_equal(nicoff_job_open_port(job, nullptr, &port), -ENOENT);
    assert_ptr_equal(port, reinterpret_cast<nicoff_port *>(0x99));
    nicoff_job_free(job);

    // Errors: -EINVAL and the message, truncated to the buffer.
    clear_env(state);
    set("NICOFF_RANK", "x");
    set("NICOFF_SIZE", "2");
    job = reinterpret_cast<nicoff_job *>(0x77);
    assert_int_equal(nicoff_job_from_env(&job, msg, sizeof(msg)), -EINVAL);
    assert_ptr_equal(job, reinterpret_cast<nicoff_job *>(0x77));
    assert_non_null(std::strstr(msg, "NICOFF_RANK='x'"));
    char tiny[8];
    std::memset(tiny, 'z', sizeof(tiny));
    assert_int_equal(nicoff_job_from_env(&job, tiny, sizeof(tiny)), -EINVAL);
    assert_int_equal(std::strlen(tiny), sizeof(tiny) - 1);
    assert_int_equal(nicoff_job_from_env(&job, nullptr, 0), -EINVAL);
    assert_int_equal(nicoff_job_from_env(nullptr, msg, sizeof(msg)), -EINVAL);

    // NULL handles.
    assert_int_equal(nicoff_job_rank(nullptr), -EINVAL);
    assert_int_equal(nicoff_job_size(nullptr), -EINVAL);
    assert_int_equal(nicoff_job_nics(nullptr), -EINVAL);
    assert_int_equal(nicoff_job_port_base(nullptr), -EINVAL);
    assert_null(nicoff_job_id(nullptr));
    assert_int_equal(nicoff_job_card_of(nullptr, 0), -EINVAL);
    assert_int_equal(nicoff_job_port_of(nullptr, 0), -EINVAL);
    assert_int_equal(nicoff_job_open_port(nullptr, nullptr, &port), -EINVAL);
    nicoff_job_free(nullptr);

    // No environment: rank 0 of 1.
    clear_env(state);
    assert_int_equal(nicoff_job_from_env(&job, nullptr, 0), 0);
    assert_int_equal(nicoff_job_rank(job), 0);
    assert_int_equal(nicoff_job_size(job), 1);
    assert_int_equal(nicoff_job_port_of(job, 0), 16);
    assert_string_equal(nicoff_job_id(job), "");
    nicoff_job_free(job);
}

// A job whose ranks are not all on this host is refused, naming the
// launcher's variable; all of them here is fine.
void test_env_several_hosts(void **) {
    set("PMI_RANK", "1");
    set("PMI_SIZE", "4");
    set("NICOFF_NICS", "2");
    set("MPI_LOCALNRANKS", "2");
    expect_env_error("MPI_LOCALNRANKS=2 of 4");
    set("MPI_LOCALNRANKS", "4");
    assert_int_equal(nicoff::Job::from_env().size(), 4);
    set("OMPI_COMM_WORLD_LOCAL_SIZE", "3");
    expect_env_error("OMPI_COMM_WORLD_LOCAL_SIZE");
    unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    set("SLURM_NNODES", "2");
    expect_env_error("SLURM_NNODES=2");
    set("SLURM_NNODES", "1");
    assert_int_equal(nicoff::Job::from_env().rank(), 1);
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_placement),
        cmocka_unit_test(test_job_mapping),
        cmocka_unit_test(test_job_bad_values),
        cmocka_unit_test_setup(test_env_none, clear_env),
        cmocka_unit_test_setup(test_env_nicoffrun, clear_env),
        cmocka_unit_test_setup(test_env_nicoffrun_defaults, clear_env),
        cmocka_unit_test_setup(test_env_mpi_fallbacks, clear_env),
        cmocka_unit_test_setup(test_env_errors, clear_env),
        cmocka_unit_test_setup(test_env_several_hosts, clear_env),
        cmocka_unit_test_setup(test_open_port_without_device, clear_env),
        cmocka_unit_test_setup(test_capi, clear_env),
    };
    return cmocka_run_group_tests_name("nicoff::Job", tests, nullptr, nullptr);
}
