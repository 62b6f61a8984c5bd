/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * The nicoff ABI's lists, each defined once here and expanded wherever it
 * is needed: define the entry macros of a list, include this file, undefine
 * them (nicoff.h does so for its enums).  No include guard on purpose.
 */

/*
 * The per-card counters (u64), in attribute order from NICOFF_NL_STAT_TX_PKTS:
 * append only, the numbers are ABI.  NICOFF_NL_STAT_FW(ATTR, name) is kept
 * by the card's firmware (struct fw_stats), NICOFF_NL_STAT_HOST(ATTR, name)
 * by the module's fabric (its fault injector and routing);
 * NICOFF_NL_STAT_<ATTR> is the attribute, name what tools call it.  Bytes
 * count headers too.
 */
#if defined(NICOFF_NL_STAT_FW) && defined(NICOFF_NL_STAT_HOST)
NICOFF_NL_STAT_FW(TX_PKTS, tx_pkts)
NICOFF_NL_STAT_FW(TX_BYTES, tx_bytes)
NICOFF_NL_STAT_FW(RX_PKTS, rx_pkts)
NICOFF_NL_STAT_FW(RX_BYTES, rx_bytes)
NICOFF_NL_STAT_FW(TX_ACKS, tx_acks)			/* explicit ACK packets */
NICOFF_NL_STAT_FW(RX_ACKS, rx_acks)
NICOFF_NL_STAT_FW(RETRANSMITS, retransmits)		/* packets sent again */
NICOFF_NL_STAT_FW(TIMEOUTS, timeouts)			/* retransmission timer expiries */
NICOFF_NL_STAT_FW(DUPLICATES, duplicates)		/* barriers' too */
NICOFF_NL_STAT_FW(OUT_OF_ORDER, out_of_order)
NICOFF_NL_STAT_FW(CRC_ERRORS, crc_errors)
NICOFF_NL_STAT_FW(UNEXPECTED, unexpected)		/* messages buffered */
NICOFF_NL_STAT_FW(RNR_DROPS, rnr_drops)			/* fragments refused */
NICOFF_NL_STAT_FW(REMOTE_ERRORS, remote_errors)		/* peers' puts and gets refused here */
NICOFF_NL_STAT_HOST(FAULT_DROPS, fault_drops)
NICOFF_NL_STAT_HOST(FAULT_DUPS, fault_dups)
NICOFF_NL_STAT_HOST(FAULT_CORRUPTS, fault_corrupts)
NICOFF_NL_STAT_HOST(FAULT_REORDERS, fault_reorders)
NICOFF_NL_STAT_HOST(FAULT_DELAYS, fault_delays)
NICOFF_NL_STAT_HOST(NO_ROUTE, no_route)
NICOFF_NL_STAT_FW(ATOMICS, atomics)			/* remote atomics executed here for peers */
NICOFF_NL_STAT_FW(ATOMIC_REPLAYS, atomic_replays)	/* duplicates answered from the table */
NICOFF_NL_STAT_FW(ATOMIC_REFUSED, atomic_refused)	/* requests beyond their sender's credit */
NICOFF_NL_STAT_FW(ATOMIC_STALE, atomic_stale)		/* requests below their sender's mark */
NICOFF_NL_STAT_FW(ATOMIC_RETRANSMITS, atomic_retransmits) /* this card's requests sent again */
NICOFF_NL_STAT_FW(ATOMIC_TIMEOUTS, atomic_timeouts)	/* this card's atomics given up */
NICOFF_NL_STAT_FW(ATOMIC_TABLE_LIVE, atomic_table_live)	/* replies held in the table now */
NICOFF_NL_STAT_FW(ATOMIC_TABLE_PEAK, atomic_table_peak)	/* most replies held at once */
NICOFF_NL_STAT_FW(BARRIER_MSGS, barrier_msgs)		/* barrier messages sent, resends too */
NICOFF_NL_STAT_FW(BARRIER_NACKS, barrier_nacks)		/* barrier NACKs sent */
NICOFF_NL_STAT_FW(BARRIER_RESENDS, barrier_resends)	/* barrier messages sent again for a NACK */
NICOFF_NL_STAT_FW(BARRIER_FAILURES, barrier_failures)	/* barriers or group creations failed */
NICOFF_NL_STAT_FW(FAST_RETRANSMITS, fast_retransmits)	/* on a peer's out-of-order report */
NICOFF_NL_STAT_FW(CONN_FAILURES, conn_failures)		/* connections given up (ETIMEDOUT) */
NICOFF_NL_STAT_FW(STALE, stale)				/* packets of another connection epoch */
NICOFF_NL_STAT_FW(ERR_REPLIES, err_replies)		/* ERR packets queued to peers */
NICOFF_NL_STAT_FW(ATOMIC_DUP_REPLIES, atomic_dup_replies) /* to requests no longer waiting */
NICOFF_NL_STAT_FW(RNR_RESENDS, rnr_resends)		/* ours refused or held back, to go again */
NICOFF_NL_STAT_FW(RNR_FAILURES, rnr_failures)		/* ours given up (ENOBUFS) */
NICOFF_NL_STAT_FW(BAD_OPCODES, bad_opcodes)		/* commands of no engine's opcode */
NICOFF_NL_STAT_FW(BAD_PACKETS, bad_packets)		/* packets of no engine's type */
NICOFF_NL_STAT_FW(PING_TIMEOUTS, ping_timeouts)		/* this card's pings given up */
NICOFF_NL_STAT_FW(PING_STRAYS, ping_strays)		/* pongs for no ping waiting */
NICOFF_NL_STAT_FW(TAIL_PROBES, tail_probes)		/* last packets resent to ask for an ack */
NICOFF_NL_STAT_FW(BCAST_PKTS, bcast_pkts)		/* broadcast data packets, resends too */
NICOFF_NL_STAT_FW(BCAST_MCASTS, bcast_mcasts)		/* of those, the fabric's multicasts */
NICOFF_NL_STAT_FW(BCAST_RESENDS, bcast_resends)		/* broadcast data sent again */
NICOFF_NL_STAT_FW(BCAST_NACKS, bcast_nacks)		/* broadcast NACKs and polls sent */
NICOFF_NL_STAT_FW(BCAST_SYNCS, bcast_syncs)		/* rounds synchronised here */
NICOFF_NL_STAT_FW(BCAST_FAILOVERS, bcast_failovers)	/* groups moved to the p2p tree */
NICOFF_NL_STAT_FW(BCAST_FAILURES, bcast_failures)	/* groups whose broadcasts failed */
NICOFF_NL_STAT_FW(BCAST_PACED, bcast_paced)		/* large bursts held: switch output full */
NICOFF_NL_STAT_FW(SILENCE_PROBES, silence_probes)	/* peers owing us, silent, asked if alive */
NICOFF_NL_STAT_FW(EPOCH_RESETS, epoch_resets)		/* owed, lost: an ACK from a later epoch */
#endif

/*
 * Barrier algorithms in number order from 0: append only, the numbers are
 * ABI.  NICOFF_BARRIER_ALG(ALG, name) is NICOFF_BARRIER_<ALG>, and name what
 * the module's barrier_alg tunable, libnicoff and the tools call it.
 */
#ifdef NICOFF_BARRIER_ALG
NICOFF_BARRIER_ALG(AUTO, auto)			/* the card times the others, keeps the best */
NICOFF_BARRIER_ALG(PAIRWISE, pairwise)		/* pairwise exchange */
NICOFF_BARRIER_ALG(DISSEMINATION, dissemination)
NICOFF_BARRIER_ALG(TREE, tree)			/* gather-broadcast tree of degree @param */
NICOFF_BARRIER_ALG(CENTRAL, central)		/* central counter */
NICOFF_BARRIER_ALG(COMBINING, combining)		/* combining tree of fan-in @param */
NICOFF_BARRIER_ALG(TOURNAMENT, tournament)
#endif

/*
 * Command opcodes in number order from 0 (struct nicoff_cmd.opcode): append
 * only, the numbers are ABI.  NICOFF_OPCODE(OP, name) is NICOFF_OP_<OP>,
 * and name what nicoff_opcode_name() calls it.  NICOFF_OPCODE_CQE(OP,
 * name) names a completion-only opcode, whose value nicoff.h gives.
 */
#if defined(NICOFF_OPCODE) && defined(NICOFF_OPCODE_CQE)
NICOFF_OPCODE(NOP, nop)
NICOFF_OPCODE(COPY, copy)
NICOFF_OPCODE(SEND, send)
NICOFF_OPCODE(RECV, recv)
NICOFF_OPCODE(PUT, put)
NICOFF_OPCODE(GET, get)
NICOFF_OPCODE(FETCH_ADD, fetch_add)
NICOFF_OPCODE(FETCH_WRITE, fetch_write)
NICOFF_OPCODE(COMPARE_SWAP, compare_swap)
NICOFF_OPCODE(GROUP_CREATE, group_create)
NICOFF_OPCODE(GROUP_DESTROY, group_destroy)
NICOFF_OPCODE(BARRIER, barrier)
NICOFF_OPCODE(PING, ping)
NICOFF_OPCODE(PUT_STRIDED, put_strided)
NICOFF_OPCODE(GET_STRIDED, get_strided)
NICOFF_OPCODE(ACC_STRIDED, acc_strided)
NICOFF_OPCODE(BCAST, bcast)
NICOFF_OPCODE(PUT_VECTOR, put_vector)
NICOFF_OPCODE(GET_VECTOR, get_vector)
NICOFF_OPCODE_CQE(REMOTE_ACCESS_ERROR, remote_access_error)
NICOFF_OPCODE_CQE(PORT_ERROR, port_error)
#endif
