/* SPDX-License-Identifier: MIT */
/* unwind.c — the profiler's cached unwinder (x86-64): the return
 * addresses of the stack a sample is taken on.
 *
 * libgcc spends ~1,600 instructions a frame: it finds the FDE, runs its
 * CFA program and copies the 17 registers' rules, for every frame of
 * every sample.  Almost every frame of compiled code has one of two CFA
 * rules at a call site: CFA = rsp + constant (no frame pointer) or
 * CFA = rbp + constant (a frame pointer), the return address at CFA - 8
 * and rbp unchanged or saved at a fixed place below the CFA.  So the rule
 * is learnt once per return address (its FDE found in the object's
 * .eh_frame_hdr table and read here) and kept in a table; a walk then
 * costs a table probe per frame.  The code of the objects loaded at start-up is
 * never unloaded, so their rules hold for good; a frame in a library
 * dlopen'ed later also asks _dl_find_object (lock-free, glibc >= 2.35)
 * which object holds it, and its entry is used only for the same address
 * in the same object (link_map) read from the same FDE and CIE bytes: a
 * rule learnt in a library since unloaded is not applied to another one
 * loaded at its address, even where its link_map reuses the old one's
 * block (unwind_check_dl).
 * Anything else (no FDE,
 * a signal frame, a DWARF expression, rbp kept in another register, a
 * frame over 1 MiB) is remembered as "not cacheable"; that sample's
 * stack is then taken by libgcc where libgcc_s was loaded before main
 * (prof_warm_up), else it stops at that frame.  The table is written with plain
 * atomic stores (a racing reader sees a check that does not match and
 * learns the rule again): no lock, no allocation.  Debug builds, and
 * LITHE_PROF_UNWIND=check in any build, compare every stack with
 * libgcc's; LITHE_PROF_UNWIND=libgcc uses libgcc alone. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"
#include "unwind.h"

/* LITHE_PROF_UNWIND=check|libgcc (prof_init); a Debug build checks every stack */
int unwind_mode = LITHE_DEBUG ? UNWIND_CHECK : UNWIND_FAST;

#if PROF_FAST_UNWIND

/* rsp, rbp and the return address at the call of lithe_prof_regs: the
 * state of its caller, where a walk starts (no register is touched but
 * rax; the CFI makes libgcc's walk through it exact too) */
__asm__(".text\n"
        ".globl lithe_prof_regs\n"
        ".hidden lithe_prof_regs\n"
        ".type lithe_prof_regs, @function\n"
        "lithe_prof_regs:\n"
        ".cfi_startproc\n"
        "  movq (%rsp), %rax\n"
        "  movq %rax, (%rdi)\n"
        "  leaq 8(%rsp), %rax\n"
        "  movq %rax, 8(%rdi)\n"
        "  movq %rbp, 16(%rdi)\n"
        "  ret\n"
        ".cfi_endproc\n"
        ".size lithe_prof_regs, .-lithe_prof_regs\n");

int (*unwind_find_object)(void *pc, struct dl_find_object *result);

enum { RULE_NONE = 0, RULE_END = 1, RULE_RSP = 2, RULE_RBP = 3 };
/* a rule: kind (2 bits) | CFA offset << 2 (20 bits) | rbp slot << 22
 * (10 bits: rbp saved at CFA - 8 * slot; 0: rbp unchanged) */
#define RULE_OFF_MAX ((1u << 20) - 1)
#define RULE_SLOT_MAX ((1u << 10) - 1)
#define UNWIND_CACHE_BITS 8 /* 256 return addresses: 4 KiB, one page (a hashed table is touched all over) */
typedef struct {
  _Atomic uintptr_t ra;
  _Atomic uint64_t rule; /* rule << 32 | check */
} unwind_slot_t;
static unwind_slot_t unwind_cache[(size_t)1 << UNWIND_CACHE_BITS] BIG_BSS;
_Atomic size_t unwind_walked, unwind_fallbacks, unwind_checked, unwind_stuck;

static uint32_t unwind_check(uintptr_t ra, const void *map) {
  return (uint32_t)(((ra ^ (uintptr_t)map) * 0x9e3779b97f4a7c15u) >> 32);
}

static uint64_t uleb(const uint8_t **p) {
  uint64_t v = 0;
  unsigned shift = 0;
  uint8_t b;
  do { b = *(*p)++; if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift; shift += 7; } while (b & 0x80);
  return v;
}

static int64_t sleb(const uint8_t **p) {
  int64_t v = 0;
  unsigned shift = 0;
  uint8_t b;
  do { b = *(*p)++; if (shift < 64) v |= (int64_t)(b & 0x7f) << shift; shift += 7; } while (b & 0x80);
  if (shift < 64 && (b & 0x40)) v |= -((int64_t)1 << shift);
  return v;
}

/* bytes of a pointer in DW_EH_PE encoding enc; -1: not handled */
static int enc_size(uint8_t enc) {
  if (enc == 0xff) return 0; /* DW_EH_PE_omit */
  if ((enc & 0x70) == 0x50) return -1; /* aligned */
  switch (enc & 0x0f) {
  case 0x00: case 0x04: case 0x0c: return 8;
  case 0x02: case 0x0a: return 2;
  case 0x03: case 0x0b: return 4;
  default: return -1;
  }
}

typedef struct {
  int64_t cfa_off;
  int cfa_reg;          /* -1: a DWARF expression */
  int rbp;              /* 0 unchanged, k > 0 saved at CFA - 8k, -1 other */
  int ra;               /* 1 at CFA - 8, 0 undefined (outermost), -1 other */
} cfa_state_t;

/* Runs a CFA program up to the return address ra (the rules of the call
 * site: instructions at locations < ra, as libgcc).  false: not handled. */
static bool run_cfa(const uint8_t *p, const uint8_t *end, uintptr_t *loc, uintptr_t ra, uint64_t code_align,
                    int64_t data_align, cfa_state_t *st, const cfa_state_t *init) {
  cfa_state_t saved[8];
  unsigned nsaved = 0;
  while (p < end && *loc < ra) {
    uint8_t op = *p++, hi = op & 0xc0, lo = op & 0x3f;
    uint64_t reg = lo, a;
    int64_t off;
    if (hi == 0x40) { *loc += lo * code_align; continue; }
    if (hi == 0x80) { off = (int64_t)uleb(&p) * data_align; goto set_offset; }
    if (hi == 0xc0) { goto restore; }
    switch (op) {
    case 0x00: break;                                      /* nop */
    case 0x02: *loc += *p++ * code_align; break;           /* advance_loc1 */
    case 0x03: { uint16_t d; memcpy(&d, p, 2); p += 2; *loc += d * code_align; break; }
    case 0x04: { uint32_t d; memcpy(&d, p, 4); p += 4; *loc += d * code_align; break; }
    case 0x05: reg = uleb(&p); off = (int64_t)uleb(&p) * data_align; goto set_offset;
    case 0x06: reg = uleb(&p); goto restore;
    case 0x07: reg = uleb(&p);                             /* undefined */
      if (reg == 16) st->ra = 0;
      else if (reg == 6) st->rbp = -1;
      break;
    case 0x08: reg = uleb(&p);                             /* same_value */
      if (reg == 6) st->rbp = 0;
      else if (reg == 16) st->ra = -1;
      break;
    case 0x09: reg = uleb(&p); (void)uleb(&p);             /* register */
      if (reg == 6) st->rbp = -1;
      else if (reg == 16) st->ra = -1;
      break;
    case 0x0a: if (nsaved == 8) return false; saved[nsaved++] = *st; break;
    case 0x0b: if (nsaved == 0) return false; *st = saved[--nsaved]; break;
    case 0x0c: st->cfa_reg = (int)uleb(&p); st->cfa_off = (int64_t)uleb(&p); break;
    case 0x0d: st->cfa_reg = (int)uleb(&p); break;
    case 0x0e: st->cfa_off = (int64_t)uleb(&p); break;
    case 0x0f: a = uleb(&p); p += a; st->cfa_reg = -1; break; /* def_cfa_expression */
    case 0x10: case 0x16:                                  /* expression, val_expression */
      reg = uleb(&p); a = uleb(&p); p += a;
      if (reg == 6) st->rbp = -1;
      else if (reg == 16) st->ra = -1;
      break;
    case 0x11: reg = uleb(&p); off = sleb(&p) * data_align; goto set_offset;
    case 0x12: st->cfa_reg = (int)uleb(&p); st->cfa_off = sleb(&p) * data_align; break;
    case 0x13: st->cfa_off = sleb(&p) * data_align; break;
    case 0x14: case 0x15:                                  /* val_offset(_sf) */
      reg = uleb(&p);
      if (op == 0x14) (void)uleb(&p); else (void)sleb(&p);
      if (reg == 6) st->rbp = -1;
      else if (reg == 16) st->ra = -1;
      break;
    case 0x2e: (void)uleb(&p); break;                      /* GNU_args_size */
    case 0x2f: reg = uleb(&p); off = -(int64_t)uleb(&p) * data_align; goto set_offset;
    default: return false;                                 /* set_loc and others */
    }
    continue;
  set_offset:
    if (reg == 6) st->rbp = off < 0 && off % 8 == 0 && -off / 8 <= RULE_SLOT_MAX ? (int)(-off / 8) : -1;
    else if (reg == 16) st->ra = off == -8 ? 1 : -1;
    continue;
  restore:
    if (!init) return false; /* restore in a CIE */
    if (reg == 6) st->rbp = init->rbp;
    else if (reg == 16) st->ra = init->ra;
  }
  return true;
}

/* The FDE of the code at pc, from the sorted table of its object's
 * .eh_frame_hdr (the form GNU ld writes: 4-byte entries relative to the
 * header); *func: where its code starts.  NULL: none, or another form. */
static const uint8_t *fde_in(const struct dl_find_object *fo, uintptr_t pc, uintptr_t *func) {
  if (!fo->dlfo_eh_frame) return NULL;
  const uint8_t *hdr = fo->dlfo_eh_frame;
  /* version 1; eh_frame_ptr pcrel|sdata4, fde_count udata4, table datarel|sdata4 */
  if (hdr[0] != 1 || hdr[1] != 0x1b || hdr[2] != 0x03 || hdr[3] != 0x3b) return NULL;
  uint32_t count;
  memcpy(&count, hdr + 8, 4);
  const int32_t *table = (const int32_t *)(const void *)(hdr + 12);
  intptr_t rel = (intptr_t)(pc - (uintptr_t)hdr);
  if (count == 0 || rel < table[0]) return NULL;
  uint32_t lo = 0, hi = count; /* the last entry whose start <= pc */
  while (hi - lo > 1) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (table[2 * mid] <= rel) lo = mid;
    else hi = mid;
  }
  *func = (uintptr_t)hdr + (uintptr_t)(intptr_t)table[2 * lo];
  return hdr + table[2 * lo + 1];
}

static const uint8_t *find_fde(uintptr_t pc, uintptr_t *func) {
  struct dl_find_object fo;
  if (unwind_find_object((void *)pc, &fo) != 0) return NULL;
  return fde_in(&fo, pc, func);
}

/* The check of a rule learnt in a library loaded after start-up: the
 * return address, the object (link_map), and what the rule is read from
 * (where the function starts, its FDE's and CIE's bytes).  Keyed on the
 * link_map alone, a dlclose and a dlopen of another library at the same
 * address, whose link_map took the freed one's block, found the old
 * library's rules (regress_unwind_dlreuse).  Same bytes: the same rule. */
#define FDE_HASH_MAX 512 /* bytes of an FDE or CIE hashed, at most */
static uint64_t bytes_hash(uint64_t h, const uint8_t *p) {
  uint32_t len;
  memcpy(&len, p, 4);
  if (len > FDE_HASH_MAX) len = FDE_HASH_MAX;
  for (uint32_t i = 0; i < len + 4; i++) h = (h ^ p[i]) * 0x100000001b3u;
  return h;
}

static uint32_t unwind_check_dl(uintptr_t ra, const struct dl_find_object *fo) {
  uintptr_t func = 0;
  const uint8_t *fde = fde_in(fo, ra - 1, &func);
  uint64_t h = 0xcbf29ce484222325u ^ func;
  if (fde) {
    uint32_t len, id;
    memcpy(&len, fde, 4);
    memcpy(&id, fde + 4, 4);
    h = bytes_hash(h, fde);
    if (len != 0 && len != 0xffffffffu) h = bytes_hash(h, fde + 4 - id);
  }
  return unwind_check(ra, fo->dlfo_link_map) ^ (uint32_t)(h >> 32) ^ (uint32_t)h;
}

/* The rule at return address ra, read from its FDE. */
static uint32_t learn_rule(uintptr_t ra) {
  uintptr_t func;
  const uint8_t *fde = find_fde(ra - 1, &func);
  if (!fde) return RULE_NONE;
  uint32_t len, id;
  memcpy(&len, fde, 4);
  if (len == 0 || len == 0xffffffffu) return RULE_NONE;
  memcpy(&id, fde + 4, 4);
  const uint8_t *fde_end = fde + 4 + len, *cie = fde + 4 - id;
  uint32_t clen;
  memcpy(&clen, cie, 4);
  if (clen == 0 || clen == 0xffffffffu) return RULE_NONE;
  const uint8_t *cie_end = cie + 4 + clen, *p = cie + 8;
  uint8_t version = *p++;
  if (version != 1 && version != 3) return RULE_NONE; /* .eh_frame uses 1 (GCC) or 3 */
  const char *aug = (const char *)p;
  p += strlen(aug) + 1;
  if (aug[0] && aug[0] != 'z') return RULE_NONE; /* "eh" and older forms */
  uint64_t code_align = uleb(&p);
  int64_t data_align = sleb(&p);
  uint64_t ra_reg = version == 1 ? *p++ : uleb(&p);
  if (ra_reg != 16) return RULE_NONE;
  uint8_t fde_enc = 0;
  if (aug[0] == 'z') {
    uint64_t alen = uleb(&p);
    const uint8_t *q = p;
    for (const char *c = aug + 1; *c; c++) {
      if (*c == 'R') fde_enc = *q++;
      else if (*c == 'L') q++;
      else if (*c == 'P') { uint8_t e = *q++; int k = enc_size(e); if (k < 0) return RULE_NONE; q += k; }
      else return RULE_NONE; /* 'S' (a signal frame) and unknown ones */
    }
    p += alen;
  }
  cfa_state_t st = {0, 7, 0, 1}, init;
  uintptr_t loc = func;
  if (!run_cfa(p, cie_end, &loc, ra, code_align, data_align, &st, NULL)) return RULE_NONE;
  init = st;
  /* pc_range (the FDE's second field, 4 bytes in the sdata4/udata4
   * forms): the function ends before ra - 1 when the code there has no FDE */
  if ((fde_enc & 0x0f) != 0x0b && (fde_enc & 0x0f) != 0x03) return RULE_NONE;
  uint32_t range;
  memcpy(&range, fde + 12, 4);
  if (ra - 1 >= func + range) return RULE_NONE;
  p = fde + 16; /* past pc_begin and pc_range */
  if (aug[0] == 'z') { uint64_t alen = uleb(&p); p += alen; }
  loc = func;
  if (!run_cfa(p, fde_end, &loc, ra, code_align, data_align, &st, &init)) return RULE_NONE;
  if (st.ra == 0) return RULE_END;
  if (st.ra != 1 || st.rbp < 0 || (st.cfa_reg != 7 && st.cfa_reg != 6)) return RULE_NONE;
  if (st.cfa_off < 8 || st.cfa_off > RULE_OFF_MAX) return RULE_NONE;
  return (st.cfa_reg == 7 ? RULE_RSP : RULE_RBP) | (uint32_t)st.cfa_off << 2 | (uint32_t)st.rbp << 22;
}

/* The code of the objects loaded when lithe started (the program and the
 * libraries it was linked with, glibc never unloads them): a rule learnt
 * there holds for good, and is used without asking _dl_find_object. */
#define PERMANENT_MAX 128
static struct { uintptr_t lo, hi; } permanent[PERMANENT_MAX] BIG_BSS;
static unsigned npermanent;

static int note_permanent(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size; (void)arg;
  for (int i = 0; i < info->dlpi_phnum && npermanent < PERMANENT_MAX; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
      permanent[npermanent].lo = info->dlpi_addr + ph->p_vaddr;
      permanent[npermanent].hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
      npermanent++;
    }
  }
  return 0;
}

static bool is_permanent(uintptr_t ra) {
  for (unsigned i = 0; i < npermanent; i++)
    if (ra > permanent[i].lo && ra <= permanent[i].hi) return true; /* the call is at ra - 1 */
  return false;
}

/* The table is 4-way set-associative (a set: 4 entries, one cache line):
 * direct-mapped, two return addresses of one stack that met in a slot
 * were learnt again at every sample (bench-fastpath --sizes 32768: 3,156
 * instructions a sample instead of ~1,300). */
#define UNWIND_WAYS 4
static _Atomic unsigned unwind_victim;

static uint32_t rule_of(uintptr_t ra) {
  unwind_slot_t *set = &unwind_cache[((ra * 0x9e3779b97f4a7c15u) >> (64 - UNWIND_CACHE_BITS)) & ~(size_t)(UNWIND_WAYS - 1)];
  uint32_t perm = unwind_check(ra, NULL);
  uint64_t v[UNWIND_WAYS];
  bool hit[UNWIND_WAYS];
  for (unsigned w = 0; w < UNWIND_WAYS; w++) {
    hit[w] = atomic_load_explicit(&set[w].ra, memory_order_acquire) == ra;
    v[w] = atomic_load_explicit(&set[w].rule, memory_order_relaxed);
    if (hit[w] && (uint32_t)v[w] == perm) return (uint32_t)(v[w] >> 32); /* a permanent object's */
  }
  struct dl_find_object fo;
  if (unwind_find_object((void *)(ra - 1), &fo) != 0) return RULE_NONE;
  uint32_t check = unwind_check_dl(ra, &fo);
  for (unsigned w = 0; w < UNWIND_WAYS; w++)
    if (hit[w] && (uint32_t)v[w] == check) return (uint32_t)(v[w] >> 32);
  uint32_t rule = learn_rule(ra);
  if (is_permanent(ra)) check = perm;
  unsigned w = 0;
  while (w < UNWIND_WAYS && atomic_load_explicit(&set[w].ra, memory_order_relaxed) != 0) w++;
  if (w == UNWIND_WAYS) /* all taken: any one */
    w = atomic_fetch_add_explicit(&unwind_victim, 1, memory_order_relaxed) % UNWIND_WAYS;
  unwind_slot_t *slot = &set[w];
  atomic_store_explicit(&slot->ra, 0, memory_order_relaxed);
  atomic_store_explicit(&slot->rule, (uint64_t)rule << 32 | check, memory_order_release);
  atomic_store_explicit(&slot->ra, ra, memory_order_release);
  return rule;
}

/* The return addresses of the stack above the call of lithe_prof_regs
 * (the first: its return into the caller); *stuck when it stopped at a
 * frame without a rule. */
NOINLINE int fast_backtrace(void **raw, int max, bool *stuck) {
  uintptr_t r[3];
  lithe_prof_regs(r);
  uintptr_t ip = r[0], sp = r[1], bp = r[2];
  int n = 0;
  *stuck = false;
  while (n < max && ip) {
    raw[n++] = (void *)ip;
    uint32_t rule = rule_of(ip), kind = rule & 3;
    if (kind == RULE_END) break;
    uintptr_t cfa = (kind == RULE_RSP ? sp : bp) + ((rule >> 2) & RULE_OFF_MAX);
    /* no rule, or a caller's frame that does not lie above (a bad one) */
    if (kind == RULE_NONE || cfa <= sp) { *stuck = true; break; }
    uint32_t slot = rule >> 22;
    if (slot) bp = *(uintptr_t *)(cfa - 8 * slot);
    ip = *(uintptr_t *)(cfa - 8);
    sp = cfa;
  }
  return n;
}

/* Before main (prof_warm_up): glibc's _dl_find_object, and the code
 * loaded now, whose rules hold for good.  False: no cached unwinder. */
bool unwind_init(void) {
  unwind_find_object = (int (*)(void *, struct dl_find_object *))dlsym(RTLD_DEFAULT, "_dl_find_object");
  dl_iterate_phdr(note_permanent, NULL);
  return unwind_find_object != NULL;
}

/* LITHE_PROF_UNWIND=check: a stack that differs from libgcc's */
/* LITHE_PROF_UNWIND=check: a stack that differs from libgcc's */
NOINLINE void unwind_mismatch(void **fast, int nf, void **gcc, int ng) {
  out_t o = {.fd = STDERR_FILENO};
  out_str(&o, "lithe: LITHE_PROF_UNWIND=check: the cached unwinder's stack differs from libgcc's\n  cached:");
  for (int i = 0; i < nf; i++) { out_str(&o, " "); out_hex(&o, (uintptr_t)fast[i]); }
  out_str(&o, "\n  libgcc:");
  for (int i = 0; i < ng; i++) { out_str(&o, " "); out_hex(&o, (uintptr_t)gcc[i]); }
  out_str(&o, "\n");
  out_flush(&o);
  abort();
}
#endif
