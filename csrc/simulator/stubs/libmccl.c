/*
 * libmccl.so of the simulated MUSA SDK: collective communication between the ranks of one process.
 *
 * The ranks of a communicator must live in the process that called mcclGetUniqueId (one thread per
 * rank, or one thread driving several ranks between mcclGroupStart and mcclGroupEnd). Buffers are
 * host memory, so the rank whose call completes a collective computes it for everybody. Ranks in
 * other processes are not simulated here: mcclCommInitRank with an id made elsewhere fails with
 * mcclInvalidUsage at once instead of hanging. Multi-process training reaches the simulated mccl
 * through torch.distributed (torch_musa.distributed's "mccl" backend), not through this library.
 *
 * Calls outside a group block until every rank has made the matching call (NCCL may return
 * earlier, enqueueing work on a stream; the stream arguments are accepted and ignored since all
 * work is done on the host). mcclCommInitRank returns without waiting for the other ranks.
 *
 * Result codes (mcclResult_t); the real values are not public, these follow NCCL's numbering:
 *   0 mcclSuccess
 *   1 mcclUnhandledMusaError   (never returned by the simulator)
 *   2 mcclSystemError          host allocation failed
 *   3 mcclInternalError
 *   4 mcclInvalidArgument      null pointer, bad rank/count/type/op, id not from mcclGetUniqueId
 *   5 mcclInvalidUsage         ranks disagree on a collective, id from another process,
 *                              mcclGroupEnd without mcclGroupStart
 *   6 mcclRemoteError          a peer aborted the communicator while this rank waited
 * mcclDataType_t: 0 int8, 1 uint8, 2 int32, 3 uint32, 4 int64, 5 uint64, 6 float16, 7 float32,
 *                 8 float64, 9 bfloat16.
 * mcclRedOp_t: 0 sum, 1 prod, 2 max, 3 min, 4 avg (integer averages truncate toward zero).
 */
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "musa_sim_sdk.h"

typedef int mcclResult_t;
typedef void* musaStream_t;

enum {
  mcclSuccess = 0,
  mcclUnhandledMusaError = 1,
  mcclSystemError = 2,
  mcclInternalError = 3,
  mcclInvalidArgument = 4,
  mcclInvalidUsage = 5,
  mcclRemoteError = 6,
};

enum {
  mcclInt8, mcclUint8, mcclInt32, mcclUint32, mcclInt64, mcclUint64,
  mcclFloat16, mcclFloat32, mcclFloat64, mcclBfloat16, mcclNumTypes
};

enum { mcclSum, mcclProd, mcclMax, mcclMin, mcclAvg, mcclNumOps };

#define MCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[MCCL_UNIQUE_ID_BYTES];
} mcclUniqueId;

/* What mcclGetUniqueId writes into the id's bytes. */
typedef struct {
  char magic[8];
  int64_t pid;
  uint64_t serial;
} id_fields;

static const char ID_MAGIC[8] = "mcclsim";

enum { K_ALLREDUCE, K_BROADCAST, K_ALLGATHER, K_REDUCESCATTER, K_REDUCE };

/* One collective call, shared by the ranks that join it (the k-th call of each rank). */
typedef struct coll {
  uint64_t seq;
  int kind, dtype, op, root;
  size_t count;
  int arrived, observed, mismatch, done;
  const void** send;
  void** recv;
  struct coll* next;
} coll;

/* A send or a receive; an unmatched one waits in its clique's list for its counterpart. */
typedef struct p2p {
  int is_send, src, dst, done, mismatch;
  uint64_t seq;
  size_t bytes;
  const void* sbuf;
  void* rbuf;
  struct p2p* next;
} p2p;

typedef struct clique {
  char id[MCCL_UNIQUE_ID_BYTES];
  int nranks, members, aborted;
  unsigned char* joined;
  coll* colls;
  p2p* pending;
  struct clique* next;
} clique;

#define COMM_TAG 0x4d43434cu

typedef struct {
  unsigned tag;
  clique* cl;
  int rank;
  uint64_t coll_seq;
  uint64_t* send_seq; /* per peer, to pair the k-th send with the k-th receive */
  uint64_t* recv_seq;
} sim_comm;

typedef sim_comm* mcclComm_t;

/* Work posted inside a group and not yet waited for. */
typedef struct ticket {
  sim_comm* comm;
  coll* c;
  p2p* p;
  struct ticket* next;
} ticket;

/* One lock and one condition for everything: collectives are rare, their cost is memcpy. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static clique* g_cliques = NULL;
static uint64_t g_serial = 0;

static __thread int t_group_depth = 0;
static __thread ticket* t_tickets = NULL;

SIM_API const char* mcclGetErrorString(mcclResult_t result) {
  switch (result) {
    case mcclSuccess: return "no error";
    case mcclUnhandledMusaError: return "unhandled musa error";
    case mcclSystemError: return "unhandled system error";
    case mcclInternalError: return "internal error";
    case mcclInvalidArgument: return "invalid argument";
    case mcclInvalidUsage: return "invalid usage";
    case mcclRemoteError: return "remote process exited or there was a network error";
    default: return "unknown result code";
  }
}

SIM_API mcclResult_t mcclGetVersion(int* version) {
  if (version == NULL) return mcclInvalidArgument;
  *version = SIM_MCCL_VERSION;
  return mcclSuccess;
}

SIM_API mcclResult_t mcclGetUniqueId(mcclUniqueId* unique_id) {
  if (unique_id == NULL) return mcclInvalidArgument;
  id_fields f;
  memcpy(f.magic, ID_MAGIC, sizeof f.magic);
  f.pid = (int64_t)getpid();
  pthread_mutex_lock(&g_mu);
  f.serial = ++g_serial;
  pthread_mutex_unlock(&g_mu);
  memset(unique_id, 0, sizeof *unique_id);
  memcpy(unique_id->internal, &f, sizeof f);
  return mcclSuccess;
}

static sim_comm* live(mcclComm_t comm) {
  return comm != NULL && comm->tag == COMM_TAG ? comm : NULL;
}

SIM_API mcclResult_t mcclCommInitRank(mcclComm_t* comm, int nranks, mcclUniqueId comm_id,
                                      int rank) {
  if (comm == NULL || nranks < 1 || rank < 0 || rank >= nranks) return mcclInvalidArgument;
  id_fields f;
  memcpy(&f, comm_id.internal, sizeof f);
  if (memcmp(f.magic, ID_MAGIC, sizeof f.magic) != 0) return mcclInvalidArgument;
  if (f.pid != (int64_t)getpid()) return mcclInvalidUsage;
  sim_comm* c = calloc(1, sizeof *c);
  uint64_t* seqs = calloc(2 * (size_t)nranks, sizeof *seqs);
  if (c == NULL || seqs == NULL) {
    free(c);
    free(seqs);
    return mcclSystemError;
  }
  mcclResult_t res = mcclSuccess;
  pthread_mutex_lock(&g_mu);
  clique* cl = g_cliques;
  while (cl != NULL && memcmp(cl->id, comm_id.internal, MCCL_UNIQUE_ID_BYTES) != 0) cl = cl->next;
  if (cl == NULL) {
    cl = calloc(1, sizeof *cl);
    unsigned char* joined = calloc((size_t)nranks, 1);
    if (cl == NULL || joined == NULL) {
      free(cl);
      free(joined);
      res = mcclSystemError;
      goto out;
    }
    memcpy(cl->id, comm_id.internal, MCCL_UNIQUE_ID_BYTES);
    cl->nranks = nranks;
    cl->joined = joined;
    cl->next = g_cliques;
    g_cliques = cl;
  } else if (cl->nranks != nranks || cl->joined[rank]) {
    res = mcclInvalidArgument;
    goto out;
  }
  cl->joined[rank] = 1;
  cl->members++;
  c->tag = COMM_TAG;
  c->cl = cl;
  c->rank = rank;
  c->send_seq = seqs;
  c->recv_seq = seqs + nranks;
  *comm = c;
out:
  pthread_mutex_unlock(&g_mu);
  if (res != mcclSuccess) {
    free(c);
    free(seqs);
  }
  return res;
}

static void free_clique_locked(clique* cl) {
  clique** link = &g_cliques;
  while (*link != cl) link = &(*link)->next;
  *link = cl->next;
  while (cl->colls != NULL) {
    coll* next = cl->colls->next;
    free(cl->colls->send);
    free(cl->colls->recv);
    free(cl->colls);
    cl->colls = next;
  }
  free(cl->joined);
  free(cl);
}

static mcclResult_t leave(mcclComm_t comm, int abort) {
  sim_comm* c = live(comm);
  if (c == NULL) return mcclInvalidArgument;
  pthread_mutex_lock(&g_mu);
  clique* cl = c->cl;
  if (abort) {
    cl->aborted = 1;
    pthread_cond_broadcast(&g_cv);
  }
  if (--cl->members == 0) free_clique_locked(cl);
  pthread_mutex_unlock(&g_mu);
  c->tag = 0;
  free(c->send_seq);
  free(c);
  return mcclSuccess;
}

SIM_API mcclResult_t mcclCommDestroy(mcclComm_t comm) { return leave(comm, 0); }

SIM_API mcclResult_t mcclCommAbort(mcclComm_t comm) { return leave(comm, 1); }

SIM_API mcclResult_t mcclCommCount(const mcclComm_t comm, int* count) {
  sim_comm* c = live(comm);
  if (c == NULL || count == NULL) return mcclInvalidArgument;
  *count = c->cl->nranks;
  return mcclSuccess;
}

SIM_API mcclResult_t mcclCommUserRank(const mcclComm_t comm, int* rank) {
  sim_comm* c = live(comm);
  if (c == NULL || rank == NULL) return mcclInvalidArgument;
  *rank = c->rank;
  return mcclSuccess;
}

/* ---- element types and reductions ---- */

static size_t type_size(int dtype) {
  static const size_t sizes[mcclNumTypes] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
  return sizes[dtype];
}

static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13); /* inf or nan */
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else { /* subnormal: normalise */
    exp = 113;
    while (!(man & 0x400u)) {
      man <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((man & 0x3ffu) << 13);
  }
  union {
    uint32_t u;
    float f;
  } v = {bits};
  return v.f;
}

static uint16_t float_to_half(float f) { /* round to nearest even */
  union {
    float f;
    uint32_t u;
  } v = {f};
  uint32_t sign = (v.u >> 16) & 0x8000u, abs = v.u & 0x7fffffffu;
  if (abs >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0));
  if (abs >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds past 65504: inf */
  if (abs < 0x38800000u) { /* below the smallest normal half: subnormal or zero */
    if (abs < 0x33000000u) return (uint16_t)sign;
    uint32_t man = (abs & 0x7fffffu) | 0x800000u, shift = 126 - (abs >> 23);
    uint32_t half = man >> shift, rest = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1u))) ++half;
    return (uint16_t)(sign | half);
  }
  uint32_t h = ((abs - 0x38000000u) >> 13), rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return (uint16_t)(sign | h);
}

static float bf16_to_float(uint16_t b) {
  union {
    uint32_t u;
    float f;
  } v = {(uint32_t)b << 16};
  return v.f;
}

static uint16_t float_to_bf16(float f) {
  union {
    float f;
    uint32_t u;
  } v = {f};
  if ((v.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((v.u >> 16) | 0x40u); /* quiet nan */
  return (uint16_t)((v.u + 0x7fffu + ((v.u >> 16) & 1u)) >> 16);
}

/* acc[i] = acc[i] (op) in[i]. Integer sums and products wrap, computed unsigned to stay defined. */
#define COMBINE(T, UT)                                                         \
  {                                                                            \
    T* a = acc;                                                                \
    const T* b = in;                                                           \
    for (size_t i = 0; i < count; ++i) {                                       \
      switch (op) {                                                            \
        case mcclProd: a[i] = (T)((UT)a[i] * (UT)b[i]); break;                 \
        case mcclMax: a[i] = b[i] > a[i] ? b[i] : a[i]; break;                 \
        case mcclMin: a[i] = b[i] < a[i] ? b[i] : a[i]; break;                 \
        default: a[i] = (T)((UT)a[i] + (UT)b[i]); break; /* sum, avg */        \
      }                                                                        \
    }                                                                          \
  }                                                                            \
  break;

#define DIVIDE(T)                                                  \
  {                                                                \
    T* a = acc;                                                    \
    for (size_t i = 0; i < count; ++i) a[i] = (T)(a[i] / (T)n);    \
  }                                                                \
  break;

static void combine(void* acc, const void* in, size_t count, int dtype, int op) {
  switch (dtype) {
    case mcclInt8: COMBINE(int8_t, uint8_t)
    case mcclUint8: COMBINE(uint8_t, uint8_t)
    case mcclInt32: COMBINE(int32_t, uint32_t)
    case mcclUint32: COMBINE(uint32_t, uint32_t)
    case mcclInt64: COMBINE(int64_t, uint64_t)
    case mcclUint64: COMBINE(uint64_t, uint64_t)
    case mcclFloat32: COMBINE(float, float)
    case mcclFloat64: COMBINE(double, double)
    default: break;
  }
}

static void divide(void* acc, size_t count, int dtype, int n) {
  switch (dtype) {
    case mcclInt8: DIVIDE(int8_t)
    case mcclUint8: DIVIDE(uint8_t)
    case mcclInt32: DIVIDE(int32_t)
    case mcclUint32: DIVIDE(uint32_t)
    case mcclInt64: DIVIDE(int64_t)
    case mcclUint64: DIVIDE(uint64_t)
    case mcclFloat32: DIVIDE(float)
    case mcclFloat64: DIVIDE(double)
    default: break;
  }
}

/* out = ins[0] (op) ... (op) ins[n-1], element offset `first`; 16-bit floats go through float. */
static int reduce_all(void* out, const void* const* ins, int n, size_t first, size_t count,
                      int dtype, int op) {
  size_t es = type_size(dtype);
  if (dtype == mcclFloat16 || dtype == mcclBfloat16) {
    float* acc = malloc(count * sizeof *acc);
    float* tmp = malloc(count * sizeof *tmp);
    if (acc == NULL || tmp == NULL) {
      free(acc);
      free(tmp);
      return -1;
    }
    for (int r = 0; r < n; ++r) {
      const uint16_t* src = (const uint16_t*)ins[r] + first;
      float* dst = r == 0 ? acc : tmp;
      for (size_t i = 0; i < count; ++i)
        dst[i] = dtype == mcclFloat16 ? half_to_float(src[i]) : bf16_to_float(src[i]);
      if (r > 0) combine(acc, tmp, count, mcclFloat32, op);
    }
    if (op == mcclAvg) divide(acc, count, mcclFloat32, n);
    uint16_t* o = out;
    for (size_t i = 0; i < count; ++i)
      o[i] = dtype == mcclFloat16 ? float_to_half(acc[i]) : float_to_bf16(acc[i]);
    free(acc);
    free(tmp);
    return 0;
  }
  memcpy(out, (const char*)ins[0] + first * es, count * es);
  for (int r = 1; r < n; ++r) combine(out, (const char*)ins[r] + first * es, count, dtype, op);
  if (op == mcclAvg) divide(out, count, dtype, n);
  return 0;
}

/* Runs a collective once every rank has joined; results go through a scratch buffer because
 * in-place calls make one rank's output another rank's input. */
static mcclResult_t execute(coll* c, int n) {
  size_t es = type_size(c->dtype);
  size_t total = c->kind == K_ALLGATHER || c->kind == K_REDUCESCATTER ? c->count * n : c->count;
  char* scratch = malloc(total * es + 1);
  if (scratch == NULL) return mcclSystemError;
  switch (c->kind) {
    case K_ALLREDUCE:
    case K_REDUCESCATTER:
    case K_REDUCE:
      if (reduce_all(scratch, c->send, n, 0, total, c->dtype, c->op) != 0) {
        free(scratch);
        return mcclSystemError;
      }
      break;
    case K_BROADCAST:
      memcpy(scratch, c->send[c->root], total * es);
      break;
    case K_ALLGATHER:
      for (int r = 0; r < n; ++r) memcpy(scratch + r * c->count * es, c->send[r], c->count * es);
      break;
  }
  for (int r = 0; r < n; ++r) {
    if (c->kind == K_REDUCE && r != c->root) continue; /* only the root receives */
    if (c->kind == K_REDUCESCATTER)
      memcpy(c->recv[r], scratch + r * c->count * es, c->count * es);
    else
      memcpy(c->recv[r], scratch, total * es);
  }
  free(scratch);
  return mcclSuccess;
}

/* ---- posting and waiting ---- */

static mcclResult_t wait_locked(sim_comm* comm, coll* c, p2p* p) {
  clique* cl = comm->cl;
  while (!(c != NULL ? c->done : p->done) && !cl->aborted) pthread_cond_wait(&g_cv, &g_mu);
  if (p != NULL) {
    mcclResult_t res = p->done ? (p->mismatch ? mcclInvalidUsage : mcclSuccess) : mcclRemoteError;
    if (!p->done) { /* aborted while unmatched: take it out of the clique's list */
      p2p** link = &cl->pending;
      while (*link != NULL && *link != p) link = &(*link)->next;
      if (*link == p) *link = p->next;
    }
    free(p);
    return res;
  }
  if (!c->done) return mcclRemoteError; /* freed with the clique */
  mcclResult_t res = c->done == 1 ? (c->mismatch ? mcclInvalidUsage : mcclSuccess) : c->done;
  if (++c->observed == cl->nranks) {
    coll** link = &cl->colls;
    while (*link != c) link = &(*link)->next;
    *link = c->next;
    free(c->send);
    free(c->recv);
    free(c);
  }
  return res;
}

static mcclResult_t finish(sim_comm* comm, coll* c, p2p* p) {
  if (t_group_depth > 0) {
    ticket* t = malloc(sizeof *t);
    if (t == NULL) return mcclSystemError; /* the op is posted: the peers are not left hanging */
    t->comm = comm;
    t->c = c;
    t->p = p;
    t->next = t_tickets;
    t_tickets = t;
    return mcclSuccess;
  }
  pthread_mutex_lock(&g_mu);
  mcclResult_t res = wait_locked(comm, c, p);
  pthread_mutex_unlock(&g_mu);
  return res;
}

static mcclResult_t post_collective(int kind, const void* sendbuff, void* recvbuff, size_t count,
                                    int dtype, int op, int root, mcclComm_t comm) {
  sim_comm* cm = live(comm);
  /* A reduce writes the root's buffer only: the others may pass none, as with NCCL. */
  int needs_recv = kind != K_REDUCE || (cm != NULL && root == cm->rank);
  if (cm == NULL || (recvbuff == NULL && needs_recv) || dtype < 0 || dtype >= mcclNumTypes || op < 0 ||
      op >= mcclNumOps || root < 0 || root >= cm->cl->nranks)
    return mcclInvalidArgument;
  if (sendbuff == NULL && (kind != K_BROADCAST || root == cm->rank)) return mcclInvalidArgument;
  clique* cl = cm->cl;
  int n = cl->nranks;
  pthread_mutex_lock(&g_mu);
  uint64_t seq = cm->coll_seq++;
  coll* c = cl->colls;
  while (c != NULL && c->seq != seq) c = c->next;
  if (c == NULL) {
    c = calloc(1, sizeof *c);
    const void** send = calloc((size_t)n, sizeof *send);
    void** recv = calloc((size_t)n, sizeof *recv);
    if (c == NULL || send == NULL || recv == NULL) {
      free(c);
      free(send);
      free(recv);
      cm->coll_seq--;
      pthread_mutex_unlock(&g_mu);
      return mcclSystemError;
    }
    c->seq = seq;
    c->kind = kind;
    c->count = count;
    c->dtype = dtype;
    c->op = op;
    c->root = root;
    c->send = send;
    c->recv = recv;
    c->next = cl->colls;
    cl->colls = c;
  } else if (c->kind != kind || c->count != count || c->dtype != dtype || c->op != op ||
             c->root != root) {
    c->mismatch = 1;
  }
  c->send[cm->rank] = sendbuff;
  c->recv[cm->rank] = recvbuff;
  if (++c->arrived == n) {
    c->done = c->mismatch || count == 0 ? 1 : (execute(c, n) == mcclSuccess ? 1 : mcclSystemError);
    pthread_cond_broadcast(&g_cv);
  }
  pthread_mutex_unlock(&g_mu);
  return finish(cm, c, NULL);
}

SIM_API mcclResult_t mcclAllReduce(const void* sendbuff, void* recvbuff, size_t count, int dtype,
                                   int op, mcclComm_t comm, musaStream_t stream) {
  (void)stream;
  return post_collective(K_ALLREDUCE, sendbuff, recvbuff, count, dtype, op, 0, comm);
}

SIM_API mcclResult_t mcclBroadcast(const void* sendbuff, void* recvbuff, size_t count, int dtype,
                                   int root, mcclComm_t comm, musaStream_t stream) {
  (void)stream;
  return post_collective(K_BROADCAST, sendbuff, recvbuff, count, dtype, mcclSum, root, comm);
}

SIM_API mcclResult_t mcclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                   int dtype, mcclComm_t comm, musaStream_t stream) {
  (void)stream;
  return post_collective(K_ALLGATHER, sendbuff, recvbuff, sendcount, dtype, mcclSum, 0, comm);
}

SIM_API mcclResult_t mcclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                       int dtype, int op, mcclComm_t comm, musaStream_t stream) {
  (void)stream;
  return post_collective(K_REDUCESCATTER, sendbuff, recvbuff, recvcount, dtype, op, 0, comm);
}

SIM_API mcclResult_t mcclReduce(const void* sendbuff, void* recvbuff, size_t count, int dtype,
                                int op, int root, mcclComm_t comm, musaStream_t stream) {
  (void)stream;
  return post_collective(K_REDUCE, sendbuff, recvbuff, count, dtype, op, root, comm);
}

static mcclResult_t post_p2p(int is_send, const void* sbuf, void* rbuf, size_t count, int dtype,
                             int peer, mcclComm_t comm) {
  sim_comm* cm = live(comm);
  if (cm == NULL || dtype < 0 || dtype >= mcclNumTypes || peer < 0 || peer >= cm->cl->nranks ||
      (count > 0 && (is_send ? sbuf == NULL : rbuf == NULL)))
    return mcclInvalidArgument;
  p2p* p = calloc(1, sizeof *p);
  if (p == NULL) return mcclSystemError;
  p->is_send = is_send;
  p->src = is_send ? cm->rank : peer;
  p->dst = is_send ? peer : cm->rank;
  p->bytes = count * type_size(dtype);
  p->sbuf = sbuf;
  p->rbuf = rbuf;
  clique* cl = cm->cl;
  pthread_mutex_lock(&g_mu);
  p->seq = is_send ? cm->send_seq[peer]++ : cm->recv_seq[peer]++;
  p2p** link = &cl->pending;
  while (*link != NULL && !((*link)->is_send != is_send && (*link)->src == p->src &&
                            (*link)->dst == p->dst && (*link)->seq == p->seq))
    link = &(*link)->next;
  p2p* other = *link;
  if (other != NULL) {
    *link = other->next;
    p2p* s = is_send ? p : other;
    p2p* r = is_send ? other : p;
    if (s->bytes != r->bytes)
      s->mismatch = r->mismatch = 1;
    else if (s->bytes > 0)
      memmove(r->rbuf, s->sbuf, s->bytes);
    s->done = r->done = 1;
    pthread_cond_broadcast(&g_cv);
  } else {
    p->next = cl->pending;
    cl->pending = p;
  }
  pthread_mutex_unlock(&g_mu);
  return finish(cm, NULL, p);
}

SIM_API mcclResult_t mcclSend(const void* sendbuff, size_t count, int dtype, int peer,
                              mcclComm_t comm, musaStream_t stream) {
  (void)stream;
  return post_p2p(1, sendbuff, NULL, count, dtype, peer, comm);
}

SIM_API mcclResult_t mcclRecv(void* recvbuff, size_t count, int dtype, int peer, mcclComm_t comm,
                              musaStream_t stream) {
  (void)stream;
  return post_p2p(0, NULL, recvbuff, count, dtype, peer, comm);
}

SIM_API mcclResult_t mcclGroupStart(void) {
  ++t_group_depth;
  return mcclSuccess;
}

/* Waits for everything posted since the outermost mcclGroupStart; reports the first failure. */
SIM_API mcclResult_t mcclGroupEnd(void) {
  if (t_group_depth == 0) return mcclInvalidUsage;
  if (--t_group_depth > 0) return mcclSuccess;
  mcclResult_t res = mcclSuccess;
  pthread_mutex_lock(&g_mu);
  while (t_tickets != NULL) {
    ticket* t = t_tickets;
    t_tickets = t->next;
    mcclResult_t r = wait_locked(t->comm, t->c, t->p);
    if (res == mcclSuccess) res = r;
    free(t);
  }
  pthread_mutex_unlock(&g_mu);
  return res;
}
