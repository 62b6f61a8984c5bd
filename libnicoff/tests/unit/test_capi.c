/*
 * The C API from strict C11 (built with -std=c11 -Wpedantic): every bad
 * argument gives a negative errno value, no device needed.
 */
#include <nicoff/nicoff.h>
#include <nicoff/prep.h>

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static nicoff_device *const sentinel_dev = (nicoff_device *)(uintptr_t)0x1234;

static void test_version(void **state) {
    (void)state;
    assert_int_equal(nicoff_abi_version(), NICOFF_ABI_VERSION);
    assert_non_null(nicoff_version());
    assert_true(strlen(nicoff_version()) >= 5); /* "x.y.z" */
}

static void test_device_open_bad_card(void **state) {
    nicoff_device *dev = sentinel_dev;
    (void)state;
    assert_int_equal(nicoff_device_open(-1, &dev), -EINVAL);
    assert_ptr_equal(dev, sentinel_dev); /* untouched on failure */
    assert_int_equal(nicoff_device_open(-2147483647 - 1, &dev), -EINVAL);
    assert_int_equal(nicoff_device_open(0, NULL), -EINVAL);
    /* No such card: /dev/nicoff999999 exists nowhere. */
    assert_int_equal(nicoff_device_open(999999, &dev), -ENOENT);
    assert_ptr_equal(dev, sentinel_dev);
}

static void test_device_open_bad_path(void **state) {
    nicoff_device *dev = sentinel_dev;
    (void)state;
    assert_int_equal(nicoff_device_open_path(NULL, &dev), -EINVAL);
    assert_int_equal(nicoff_device_open_path("", &dev), -EINVAL);
    assert_int_equal(nicoff_device_open_path("/dev/nicoff0", NULL), -EINVAL);
    assert_int_equal(nicoff_device_open_path("/nonexistent/nicoff0", &dev), -ENOENT);
    /* A char device that is not a nicoff card answers the query with ENOTTY. */
    assert_int_equal(nicoff_device_open_path("/dev/null", &dev), -ENOTTY);
    assert_ptr_equal(dev, sentinel_dev);
    nicoff_device_close(NULL); /* harmless */
}

static void test_null_device(void **state) {
    struct nicoff_query q;
    nicoff_port *port = (nicoff_port *)(uintptr_t)0x5678;
    struct nicoff_port_attr attr = {NICOFF_PORT_ANY, 64, 64, 0};
    (void)state;
    assert_int_equal(nicoff_device_query(NULL, &q), -EINVAL);
    assert_int_equal(nicoff_device_query(sentinel_dev, NULL), -EINVAL);
    assert_int_equal(nicoff_port_create(NULL, NULL, &port), -EINVAL);
    assert_int_equal(nicoff_port_create(NULL, &attr, &port), -EINVAL);
    assert_int_equal(nicoff_port_create(sentinel_dev, &attr, NULL), -EINVAL);
    assert_ptr_equal(port, (nicoff_port *)(uintptr_t)0x5678);
}

static void test_null_port(void **state) {
    struct nicoff_cmd cmd;
    struct nicoff_cqe cqe[4];
    struct nicoff_port_stats st;
    (void)state;
    memset(&cmd, 0, sizeof(cmd));
    nicoff_port_destroy(NULL); /* harmless */
    assert_int_equal(nicoff_port_fd(NULL), -EINVAL);
    assert_int_equal(nicoff_port_number(NULL), -EINVAL);
    assert_int_equal(nicoff_port_in_error(NULL), -EINVAL);
    assert_int_equal(nicoff_port_kicks(NULL), 0);
    assert_int_equal(nicoff_port_get_stats(NULL, &st), -EINVAL);
    assert_int_equal(nicoff_post(NULL, &cmd), -EINVAL);
    assert_int_equal(nicoff_post_batch(NULL, &cmd, 1), -EINVAL);
    assert_int_equal(nicoff_post_nop(NULL, 1), -EINVAL);
    assert_int_equal(nicoff_post_copy(NULL, 1, 0, 2, 0, 64, 1), -EINVAL);
    assert_int_equal(nicoff_post_ping(NULL, 1, 2, 1), -EINVAL);
    struct nicoff_op_strided sop = {0};
    assert_int_equal(nicoff_post_strided(NULL, NICOFF_OP_PUT_STRIDED, &sop, 1), -EINVAL);
    nicoff_strided *sd = (nicoff_strided *)(uintptr_t)0x1234;
    const uint64_t count[2] = {8, 2}, stride[1] = {16};
    assert_int_equal(nicoff_strided_create(NULL, &sd), -EINVAL);
    assert_ptr_equal(sd, (nicoff_strided *)(uintptr_t)0x1234);
    nicoff_strided_destroy(NULL);
    assert_int_equal(nicoff_put_strided(NULL, NULL, 0, stride, 0, stride, count, 1, 1, 2, 3, 4),
                     -EINVAL);
    assert_int_equal(nicoff_get_strided(NULL, 0, stride, NULL, 0, stride, count, 1, 1, 2, 3, 4),
                     -EINVAL);
    assert_int_equal(nicoff_acc_strided(NULL, NICOFF_ACC_INT64, 2, NULL, 0, stride, 0, stride,
                                        count, 1, 1, 2, 3, 4),
                     -EINVAL);
    const nicoff_giov giov = {stride, stride, 1, 8};
    assert_int_equal(nicoff_put_vector(NULL, &giov, 1, NULL, 1, 2, 3, 4), -EINVAL);
    assert_int_equal(nicoff_get_vector(NULL, &giov, 1, NULL, 1, 2, 3, 4), -EINVAL);
    assert_int_equal(nicoff_poll(NULL, cqe, 4), -EINVAL);
    assert_int_equal(nicoff_wait(NULL, 0), -EINVAL);
}

/* The strided methods' calls refuse NULLs and bad numbers before anything runs. */
static void test_strided_methods_args(void **state) {
    const uint64_t count[2] = {8, 2}, stride[1] = {16};
    struct nicoff_strided_peer peer = {0};
    struct nicoff_hbna_address addr;
    struct nicoff_strided_target_stats st;
    struct nicoff_strided_done done;
    nicoff_strided_engine *eng = (nicoff_strided_engine *)(uintptr_t)0x1234;
    nicoff_strided_target *tgt = (nicoff_strided_target *)(uintptr_t)0x5678;
    char mem[64];
    (void)state;
    assert_int_equal(nicoff_strided_engine_create(NULL, &eng), -EINVAL);
    assert_ptr_equal(eng, (nicoff_strided_engine *)(uintptr_t)0x1234);
    nicoff_strided_engine_destroy(NULL);
    /* Buffers and their size go together; no memory with a length is refused. */
    assert_int_equal(nicoff_strided_target_create(1, mem, sizeof(mem), 4, 0, &tgt), -EINVAL);
    assert_int_equal(nicoff_strided_target_create(1, NULL, sizeof(mem), 0, 0, &tgt), -EINVAL);
    assert_int_equal(nicoff_strided_target_create(1, mem, sizeof(mem), 0, 0, NULL), -EINVAL);
    assert_ptr_equal(tgt, (nicoff_strided_target *)(uintptr_t)0x5678);
    nicoff_strided_target_destroy(NULL);
    assert_int_equal(nicoff_strided_target_address(NULL, &addr), -EINVAL);
    assert_int_equal(nicoff_strided_target_get_stats(NULL, &st), -EINVAL);
    assert_int_equal(nicoff_strided_start_put(NULL, NICOFF_STRIDED_NIC, NULL, 0, stride, 0, stride,
                                              count, 1, &peer, 1),
                     -EINVAL);
    assert_int_equal(nicoff_strided_start_get(NULL, NICOFF_STRIDED_HBNA, 0, stride, NULL, 0, stride,
                                              count, 1, &peer, 1),
                     -EINVAL);
    assert_int_equal(nicoff_strided_start_acc(NULL, NICOFF_STRIDED_NAIVE, NICOFF_ACC_INT64, 2, NULL,
                                              0, stride, 0, stride, count, 1, &peer, 1),
                     -EINVAL);
    assert_int_equal(nicoff_strided_poll(NULL, &done, 1), -EINVAL);
    assert_int_equal(nicoff_strided_wait(NULL, &done, 0), -EINVAL);
    assert_int_equal(nicoff_strided_resolve(NULL, NICOFF_STRIDED_AUTO, count, 1, &peer), -EINVAL);
    assert_string_equal(nicoff_strided_method_name(NICOFF_STRIDED_NIC), "nic");
    assert_string_equal(nicoff_strided_method_name(NICOFF_STRIDED_HBNA), "hbna");
    assert_string_equal(nicoff_strided_method_name(NICOFF_STRIDED_NAIVE), "naive");
    assert_string_equal(nicoff_strided_method_name(NICOFF_STRIDED_AUTO), "auto");
    assert_null(nicoff_strided_method_name(-1));
    assert_null(nicoff_strided_method_name(4));
}

static void test_null_mr(void **state) {
    char buf[64];
    nicoff_mr *mr = (nicoff_mr *)(uintptr_t)0x9abc;
    (void)state;
    assert_int_equal(nicoff_mr_reg(NULL, buf, sizeof(buf), NICOFF_ACCESS_LOCAL_WRITE, &mr),
                     -EINVAL);
    assert_ptr_equal(mr, (nicoff_mr *)(uintptr_t)0x9abc);
    assert_int_equal(nicoff_mr_dereg(NULL), -EINVAL);
    assert_int_equal(nicoff_mr_handle(NULL), 0);
    assert_int_equal(nicoff_mr_rkey(NULL), 0);
}

static void test_null_atomics(void **state) {
    struct nicoff_remote_word w;
    nicoff_rmem *mem = (nicoff_rmem *)(uintptr_t)0x1111;
    nicoff_lock *lock = (nicoff_lock *)(uintptr_t)0x2222;
    nicoff_atomic_server *srv = (nicoff_atomic_server *)(uintptr_t)0x3333;
    uint64_t old = 7, buf[8];
    volatile int stop = 1;
    (void)state;
    memset(&w, 0, sizeof(w));
    assert_int_equal(nicoff_post_fetch_add(NULL, 1, 2, 3, 0, 8, 1, 9), -EINVAL);
    assert_int_equal(nicoff_post_swap(NULL, 1, 2, 3, 0, 8, 1, 9), -EINVAL);
    assert_int_equal(nicoff_post_compare_swap(NULL, 1, 2, 3, 0, 8, 0, 1, 9), -EINVAL);
    assert_int_equal(nicoff_rmem_create(NULL, NICOFF_RMEM_CARD, &mem), -EINVAL);
    assert_ptr_equal(mem, (nicoff_rmem *)(uintptr_t)0x1111);
    assert_int_equal(nicoff_rmem_atomic(NULL, NICOFF_OP_FETCH_ADD, &w, 1, 0, &old), -EINVAL);
    assert_int_equal(old, 7);
    nicoff_rmem_destroy(NULL);
    assert_int_equal(nicoff_lock_create(NULL, NICOFF_LOCK_TAS, 0, NULL, 0, &w, NULL, 0, &lock),
                     -EINVAL);
    assert_ptr_equal(lock, (nicoff_lock *)(uintptr_t)0x2222);
    assert_int_equal(nicoff_lock_acquire(NULL), -EINVAL);
    assert_int_equal(nicoff_lock_release(NULL), -EINVAL);
    nicoff_lock_destroy(NULL);
    assert_int_equal(
        nicoff_atomic_server_create(NULL, buf, sizeof(buf), NICOFF_SERVER_POLL, 0, &srv), -EINVAL);
    assert_ptr_equal(srv, (nicoff_atomic_server *)(uintptr_t)0x3333);
    assert_int_equal(nicoff_atomic_server_serve(NULL, &stop), -EINVAL);
    assert_int_equal(nicoff_atomic_server_serve_ready(NULL), -EINVAL);
    nicoff_atomic_server_destroy(NULL);
}

static void test_null_bcast(void **state) {
    char buf[8];
    struct nicoff_member m = {0, 16};
    struct nicoff_group_attr attr;
    nicoff_group *g = (nicoff_group *)(uintptr_t)0x4444;
    nicoff_bcast_req *req = (nicoff_bcast_req *)(uintptr_t)0x5555;
    nicoff_host_bcast *hb = (nicoff_host_bcast *)(uintptr_t)0x6666;
    (void)state;
    memset(&attr, 0, sizeof(attr));
    assert_int_equal(nicoff_group_create_attr(NULL, &m, 1, 0, 1, &attr, &g), -EINVAL);
    assert_int_equal(nicoff_group_create_job_attr(NULL, NULL, NULL, &g), -EINVAL);
    /* Attributes refused before the port is looked at (it is not one). */
    {
        nicoff_port *bogus = (nicoff_port *)(uintptr_t)0x7777;

        attr.flags = NICOFF_GROUP_F_HOST_TRIALS;
        attr.algorithm = NICOFF_BARRIER_TREE;
        assert_int_equal(nicoff_group_create_attr(bogus, &m, 1, 0, 1, &attr, &g), -EINVAL);
        attr.algorithm = NICOFF_BARRIER_DEFAULT;
        assert_int_equal(nicoff_group_create_attr(bogus, &m, 1, 0, 1, &attr, &g), -EINVAL);
        attr.algorithm = NICOFF_BARRIER_AUTO;
        attr.flags = NICOFF_GROUP_F_ALL + 1;
        assert_int_equal(nicoff_group_create_attr(bogus, &m, 1, 0, 1, &attr, &g), -EINVAL);
        attr.flags = NICOFF_GROUP_F_HOST_TRIALS;
        attr.reserved0 = 1;
        assert_int_equal(nicoff_group_create_attr(bogus, &m, 1, 0, 1, &attr, &g), -EINVAL);
        memset(&attr, 0, sizeof(attr));
    }
    assert_ptr_equal(g, (nicoff_group *)(uintptr_t)0x4444);
    assert_int_equal(nicoff_group_broadcast(NULL, NULL, 0, 8, 0), -EINVAL);
    assert_int_equal(nicoff_group_broadcast_buf(NULL, buf, sizeof(buf), 0), -EINVAL);
    assert_int_equal(nicoff_group_broadcast_start(NULL, NULL, 0, 8, 0, &req), -EINVAL);
    assert_int_equal(nicoff_group_broadcast_start_buf(NULL, buf, sizeof(buf), 0, &req), -EINVAL);
    assert_ptr_equal(req, (nicoff_bcast_req *)(uintptr_t)0x5555);
    assert_int_equal(nicoff_bcast_wait(NULL), -EINVAL);
    assert_int_equal(nicoff_bcast_test(NULL), -EINVAL);
    nicoff_bcast_free(NULL);
    assert_int_equal(nicoff_host_bcast_create(NULL, &m, 1, 0, &hb), -EINVAL);
    assert_ptr_equal(hb, (nicoff_host_bcast *)(uintptr_t)0x6666);
    assert_int_equal(nicoff_host_broadcast(NULL, NULL, 0, 8, 0), -EINVAL);
    assert_int_equal(nicoff_host_broadcast_buf(NULL, buf, sizeof(buf), 0), -EINVAL);
    nicoff_host_bcast_free(NULL);
}

/* The builders fill every field they name and zero the rest. */
static void test_prep_bcast(void **state) {
    struct nicoff_cmd c, z;
    (void)state;
    memset(&c, 0xff, sizeof(c));
    nicoff_prep_bcast(&c, 7, 3, 5, 4096, 16384, 99);
    assert_int_equal(c.opcode, NICOFF_OP_BCAST);
    assert_int_equal(c.tag, 99);
    assert_int_equal(c.bcast.group_id, 7);
    assert_int_equal(c.bcast.root, 3);
    assert_int_equal(c.bcast.mr, 5);
    assert_int_equal(c.bcast.off, 4096);
    assert_int_equal(c.bcast.len, 16384);
    memset(&z, 0, sizeof(z));
    assert_int_equal(c.flags, 0);
    assert_int_equal(c.bcast.reserved0, 0);
    assert_memory_equal(c.bcast.reserved, z.bcast.reserved, sizeof(z.bcast.reserved));
    memset(&c, 0xff, sizeof(c));
    nicoff_prep_group_create_bcast(&c, 7, 1, 8, 5, 64, NICOFF_BARRIER_TREE, 2, 16,
                                   NICOFF_BCAST_F_NOCRC | NICOFF_BCAST_F_P2P, 42);
    assert_int_equal(c.opcode, NICOFF_OP_GROUP_CREATE);
    assert_int_equal(c.group.size, 8);
    assert_int_equal(c.group.param, 2);
    assert_int_equal(c.group.bcast_channels, 16);
    assert_int_equal(c.group.bcast_flags, NICOFF_BCAST_F_ALL);
    assert_int_equal(c.group.reserved, 0);
    nicoff_prep_group_create(&c, 7, 1, 8, 5, 64, NICOFF_BARRIER_TREE, 2, 42);
    assert_int_equal(c.group.bcast_channels, 0);
    assert_int_equal(c.group.bcast_flags, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_device_open_bad_card),
        cmocka_unit_test(test_device_open_bad_path),
        cmocka_unit_test(test_null_device),
        cmocka_unit_test(test_null_port),
        cmocka_unit_test(test_strided_methods_args),
        cmocka_unit_test(test_null_mr),
        cmocka_unit_test(test_null_atomics),
        cmocka_unit_test(test_null_bcast),
        cmocka_unit_test(test_prep_bcast),
    };
    return cmocka_run_group_tests_name("libnicoff C API errors", tests, NULL, NULL);
}
