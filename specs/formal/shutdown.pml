/*
 * The shutdown protocol of coordkit, for spin (specs/formal.md, FORMAL-1..7).
 *
 * Processes (pids in the order spin gives them):
 *   0 init (= main): the training loop consuming the queue, then
 *     request_stop in a finally, then join with a grace period;
 *   1, 2 runner(0), runner(1): QueueRunner op threads (RUNNER-4);
 *   3 close_on_stop: the QueueRunner close-on-stop thread (RUNNER-5).
 * Every runner op enqueues into one FIFOQueue of capacity CAP, and the source of
 * runner i holds ELEMS elements, then raises OutOfRangeError (the input is used up);
 * any op call may instead fail with an error.
 *
 * Planted bugs, one per property (FORMAL-6), chosen with -D:
 *   BUG_LOST_FIRST_EXCEPTION  request_stop reads the stop flag before taking the lock
 *                             and then records unconditionally (FORMAL-3 fails)
 *   BUG_CLOSE_DROPS_ELEMENTS  a plain close empties the buffer (FORMAL-4 fails)
 *   BUG_ENQUEUE_IGNORES_CLOSED the enqueue shortcut (Q-MODEL-5) forgets the closed
 *                             flag (FORMAL-5 fails)
 *   BUG_CANCEL_OP_IS_PLAIN    the runner's default cancel_op is a plain close (RUNNER-1)
 *                             (FORMAL-7 fails: a runner blocked in a full queue never ends)
 * Every `EV(...)` prints one event in a guided simulation (spin -t): the steps the
 * counterexample-to-test translator maps onto Python threads (specs/formal/README.md).
 */

#ifndef CAP
#define CAP 1
#endif
#ifndef ELEMS
#define ELEMS 2
#endif
#define N 2            /* runner op threads */
#define CLOSER N       /* the id of a plain close in the enqueue list */

/* Stop reasons: NONE, the main thread's error, runner i's error (E_RUNNER + i), and
 * the CancelledError a runner gets from an enqueue cancelled by a close. */
#define NONE 0
#define E_MAIN 1
#define E_RUNNER 2
#define E_CANCELLED 4

/* What an attempt in the enqueue list ended with. */
#define PENDING 0
#define OK 1
#define CANCELLED 2

mtype = { check, read, stopped, op_enqueue, op_error, op_exhausted, take, train_error };
#define EV(what, value) printf("@ %d %e %d\n", _pid, what, value)

/* --- Coordinator (coordkit/coordinator.py) --- */
bool stop;             /* the stop event (COORD-2) */
byte rec = NONE;       /* the record (COORD-4) */
byte first = NONE;     /* ghost: the reason of the first request that set the stop */
byte ended;            /* runner op threads and close_on_stop that have ended */

/* --- FIFOQueue (coordkit/queues.py) --- */
byte q_len;            /* stored elements */
bool closed;           /* Q-CLOSE-1: set when a close takes effect */
bool cancel_closed;    /* ghost: a cancelling close has been made (Q-CLOSE-3) */
byte accepted;         /* ghost: elements ever stored */
byte taken;            /* ghost: elements ever dequeued */
chan elist = [N + 1] of { byte };   /* the enqueue list: runner ids, CLOSER (Q-MODEL-1) */
byte result[N + 1];

/* --- QueueRunner (coordkit/queue_runner.py) --- */
byte runs = N;         /* op threads not yet ended (RUNNER-2) */

/* COORD-3..6: only the first stop request can record; later ones are dropped. */
inline request_stop(ex) {
#ifdef BUG_LOST_FIRST_EXCEPTION
  atomic { EV(read, stop); was = stop };
  if
  :: was -> skip
  :: else ->
    atomic {
      EV(stopped, ex);
      if :: !stop -> first = ex :: else -> skip fi;
      if :: ex != NONE -> rec = ex :: else -> skip fi;
      stop = true
    }
  fi
#else
  atomic {
    EV(stopped, ex);
    if :: !stop -> first = ex :: else -> skip fi;
    if :: !stop && ex != NONE && rec == NONE -> rec = ex :: else -> skip fi;
    stop = true
  }
#endif
}

/* Q-MODEL-2: serve the enqueue list from its head until its head cannot move.
 * One consumer, so the dequeue list is not modelled: where the code hands a stored
 * element to the waiting dequeue inside the flush, the model's consumer takes it at its
 * next step (FORMAL-8). */
inline flush() {
  do
  :: len(elist) > 0 ->
    elist?<w>;
    if
    :: w == CLOSER -> elist?w; closed = true;   /* Q-CLOSE-1; on a closed queue it fails (Q-CLOSE-2),
                                                    and the runner ignores that (RUNNER-4): same end */
#ifdef BUG_CLOSE_DROPS_ELEMENTS
       q_len = 0;
#endif
       result[w] = OK
    :: w != CLOSER && closed -> elist?w; result[w] = CANCELLED     /* Q-ENQ-2 */
    :: w != CLOSER && !closed && q_len < CAP ->                   /* Q-ENQ-2 */
       assert(!cancel_closed);                                    /* FORMAL-5 */
       elist?w; q_len++; accepted++; result[w] = OK
    :: else -> break
    fi
  :: else -> break
  od;
  w = 0
}

/* Q-ENQ-2 with the Q-MODEL-5 shortcut; r is OK or CANCELLED. */
inline enqueue(id, r) {
  atomic {
#ifdef BUG_ENQUEUE_IGNORES_CLOSED
    if
    :: len(elist) == 0 && q_len < CAP -> assert(!cancel_closed); q_len++; accepted++; result[id] = OK
#else
    if
    :: len(elist) == 0 && !closed && q_len < CAP -> assert(!cancel_closed); q_len++; accepted++; result[id] = OK
#endif
    :: else -> elist!id; result[id] = PENDING; flush()
    fi
  };
  atomic { result[id] != PENDING -> r = result[id]; result[id] = PENDING }
}

/* Q-CLOSE-1 (plain: waits behind the enqueues ahead of it) and Q-CLOSE-3 (cancel:
 * at once; every waiting enqueue fails with CancelledError). */
inline close(cancel) {
  if
  :: cancel ->
    atomic {
      cancel_closed = true; closed = true;
      do
      :: len(elist) > 0 -> elist?w; result[w] = CANCELLED
      :: else -> break
      od;
      w = 0
    }
  :: else ->
    atomic { elist!CLOSER; flush() };
    atomic { result[CLOSER] != PENDING -> result[CLOSER] = PENDING }
  fi
}

/* RUNNER-4: the runner loop; RUNNER-6: a stop before the start leaves at once. */
proctype runner(byte i) {
  byte w, r, done;
  bool was;
  do
  :: atomic { stop -> EV(check, 1) } -> break                  /* RUNNER-4 step 1 */
  :: atomic { !stop -> EV(check, 0) } ->
    if
    :: done < ELEMS ->                                          /* RUNNER-4 step 2 */
      EV(op_enqueue, i);
      enqueue(i, r);
      if
      :: r == OK -> done++
      :: else -> request_stop(E_CANCELLED); break               /* RUNNER-4 step 4, RUNNER-5 */
      fi
    :: done == ELEMS ->                                         /* RUNNER-4 step 3 */
      EV(op_exhausted, i);
      atomic { runs--; r = runs };
      if
      :: r == 0 -> close(false)                                 /* the close op */
      :: else -> skip
      fi;
      goto exhausted
    :: EV(op_error, i); request_stop(E_RUNNER + i); break       /* RUNNER-4 step 4 */
    fi
  od;
  runs--;
exhausted:
  ended++
}

/* RUNNER-5: wait for the stop, then the cancel op. */
proctype close_on_stop() {
  byte w;
  stop;
#ifdef BUG_CANCEL_OP_IS_PLAIN
  close(false);
#else
  close(true);
#endif
  ended++
}

init {
  byte w, reason = NONE;
  bool was, live;
  atomic { run runner(0); run runner(1); run close_on_stop() }; /* RUNNER-3, start=True */
  /* The training loop: while not coord.should_stop(): dequeue (Q-DEQ-1, Q-CLOSE-5). */
  do
  :: atomic { stop -> EV(check, 1) } -> break
  :: atomic { !stop -> EV(check, 0) } ->
    if
    :: atomic {
         q_len > 0 -> EV(take, 1); q_len--; taken++;
         if :: len(elist) > 0 -> flush() :: else -> skip fi
       }
    :: atomic {
         q_len == 0 && closed -> EV(take, 0);
         assert(taken == accepted)                              /* FORMAL-4 */
       } -> break
    :: EV(train_error, 0); reason = E_MAIN; break
    fi
  od;
  request_stop(reason);                                         /* finally: request_stop */
  /* join (COORD-13): phase one ends with the stop, which is set by now;
   * phase two (COORD-14): the grace period, which may run out at any time. */
  if
  :: ended == N + 1 -> live = false
  :: live = (ended < N + 1)                                     /* the grace period ran out */
  fi;
  /* COORD-15: join raises the record, which is the first request's exception. */
  assert(rec == first)                                          /* FORMAL-3 */
}

/* FORMAL-7: once the stop is requested, every runner thread ends (under weak fairness). */
ltl runners_end { [] (stop -> <> (ended == N + 1)) }
