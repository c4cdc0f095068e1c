;; demo.wat: the devnet's demo workload, a GPU-job-shaped, deterministic
;; WASI preview1 command module.
;;
;;   demo [N]      N a decimal integer in 1..2048 (default 160)
;;
;; It fills two N×N matrices of u32 from a fixed xorshift32 stream,
;; multiplies them modulo 2^32 (C = A·B), and hashes C into a checksum
;; (FNV-1a over C's words in row-major order). Stdout gets a start line, four
;; progress lines ("progress 1/4" .. "progress 4/4") and a final
;; "done: n=<N> checksum=<value>"; the preopened directory /out gets
;; result.txt holding "n=<N> checksum=<value>\n". The output is the same on
;; every host, so two providers' output CIDs can be compared.
;;
;; A bad N (or more than one argument) prints a usage line to stderr and
;; exits 64 (EX_USAGE); a missing /out or a failed write exits 1.
;;
;; Rebuild demo.wasm after editing: scripts/build-demo-wasm.sh, then update
;; CID (and ExpectedResult if the output changed) in demo.go.
;;
;; Memory map (64 KiB initial page, grown on demand):
;;        0  iovec for fd_write: buf ptr, len
;;        8  fd_write's nwritten
;;       12  argc                  (args_sizes_get)
;;       16  argv buffer size      (args_sizes_get)
;;       20  fd returned by path_open
;;       24  prestat: tag (u8) at 24, dir name length (u32) at 28
;;       32  preopen dir name      (16 bytes)
;;       64  digit scratch for $put_u32 (10 bytes)
;;      128  line buffer           (up to 1024)
;;     1024  NUL-terminated strings, one per 64-byte slot
;;     4096  argv pointers, then the argv strings, then matrices A, B, C
(module
  (import "wasi_snapshot_preview1" "args_sizes_get"
    (func $args_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "args_get"
    (func $args_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write"
    (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_prestat_get"
    (func $fd_prestat_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_prestat_dir_name"
    (func $fd_prestat_dir_name (param i32 i32 i32) (result i32)))
  ;; path_open(dirfd, lookupflags, path, path_len, oflags,
  ;;           rights_base, rights_inheriting, fdflags, *fd) -> errno
  (import "wasi_snapshot_preview1" "path_open"
    (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_close"
    (func $fd_close (param i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit"
    (func $proc_exit (param i32)))

  (memory (export "memory") 1)

  ;; Strings, NUL-terminated, at 1024 + 64*slot.
  (data (i32.const 1024) "progress \00")                                  ;; 0
  (data (i32.const 1088) "/4\n\00")                                       ;; 1
  (data (i32.const 1152) "start: n=\00")                                  ;; 2
  (data (i32.const 1216) "done: \00")                                     ;; 3
  (data (i32.const 1280) "n=\00")                                         ;; 4
  (data (i32.const 1344) " checksum=\00")                                 ;; 5
  (data (i32.const 1408) "result.txt\00")                                 ;; 6
  (data (i32.const 1472) "/out\00")                                       ;; 7
  (data (i32.const 1536) "demo: usage: demo [N], N in 1..2048\n\00")      ;; 8
  (data (i32.const 1600) "demo: no /out directory preopened\n\00")        ;; 9
  (data (i32.const 1664) "demo: cannot create /out/result.txt\n\00")      ;; 10
  (data (i32.const 1728) "demo: cannot write /out/result.txt\n\00")       ;; 11
  (data (i32.const 1792) "demo: out of memory\n\00")                      ;; 12
  (data (i32.const 1856) "demo: cannot read arguments\n\00")              ;; 13

  ;; Fixed addresses, see the memory map above.
  (global $IOVEC i32 (i32.const 0))
  (global $NWRITTEN i32 (i32.const 8))
  (global $ARGC i32 (i32.const 12))
  (global $ARGV_SIZE i32 (i32.const 16))
  (global $OPENED_FD i32 (i32.const 20))
  (global $PRESTAT i32 (i32.const 24))
  (global $DIRNAME i32 (i32.const 32))
  (global $DIGITS i32 (i32.const 64))
  (global $LINE i32 (i32.const 128))
  (global $HEAP i32 (i32.const 4096))

  (global $DEFAULT_N i32 (i32.const 160))
  (global $MAX_N i32 (i32.const 2048))

  ;; Bytes used in the line buffer.
  (global $line_len (mut i32) (i32.const 0))

  ;; ---------------------------------------------------------------- output

  ;; $putc appends one byte to the line buffer. Lines are built only from
  ;; the fixed strings and numbers, so they never overflow it.
  (func $putc (param $c i32)
    (i32.store8 (i32.add (global.get $LINE) (global.get $line_len)) (local.get $c))
    (global.set $line_len (i32.add (global.get $line_len) (i32.const 1))))

  ;; $puts appends the NUL-terminated string at $s.
  (func $puts (param $s i32)
    (local $c i32)
    (block $end
      (loop $next
        (local.set $c (i32.load8_u (local.get $s)))
        (br_if $end (i32.eqz (local.get $c)))
        (call $putc (local.get $c))
        (local.set $s (i32.add (local.get $s) (i32.const 1)))
        (br $next))))

  ;; $put_u32 appends $v, unsigned, in decimal: digits are produced least
  ;; significant first into the scratch area, then copied out in reverse.
  (func $put_u32 (param $v i32)
    (local $n i32)
    (loop $digit
      (i32.store8 (i32.add (global.get $DIGITS) (local.get $n))
        (i32.add (i32.const 48) (i32.rem_u (local.get $v) (i32.const 10))))
      (local.set $n (i32.add (local.get $n) (i32.const 1)))
      (local.set $v (i32.div_u (local.get $v) (i32.const 10)))
      (br_if $digit (local.get $v)))
    (loop $copy
      (local.set $n (i32.sub (local.get $n) (i32.const 1)))
      (call $putc (i32.load8_u (i32.add (global.get $DIGITS) (local.get $n))))
      (br_if $copy (local.get $n))))

  ;; $write_all writes $len bytes at $ptr to $fd, looping over short
  ;; writes. It returns a WASI errno (0 on success).
  (func $write_all (param $fd i32) (param $ptr i32) (param $len i32) (result i32)
    (local $errno i32)
    (local $n i32)
    (block $done
      (loop $more
        (br_if $done (i32.eqz (local.get $len)))
        (i32.store (global.get $IOVEC) (local.get $ptr))
        (i32.store offset=4 (global.get $IOVEC) (local.get $len))
        (local.set $errno
          (call $fd_write (local.get $fd) (global.get $IOVEC) (i32.const 1) (global.get $NWRITTEN)))
        (if (local.get $errno) (then (return (local.get $errno))))
        (local.set $n (i32.load (global.get $NWRITTEN)))
        ;; A write that makes no progress would loop forever: call it EIO.
        (if (i32.eqz (local.get $n)) (then (return (i32.const 29))))
        (local.set $ptr (i32.add (local.get $ptr) (local.get $n)))
        (local.set $len (i32.sub (local.get $len) (local.get $n)))
        (br $more)))
    (i32.const 0))

  ;; $flush writes the line buffer to $fd and empties it; it returns the
  ;; errno of the write.
  (func $flush (param $fd i32) (result i32)
    (local $len i32)
    (local.set $len (global.get $line_len))
    (global.set $line_len (i32.const 0))
    (call $write_all (local.get $fd) (global.get $LINE) (local.get $len)))

  ;; $fail prints the message at $msg to stderr and exits with $code.
  (func $fail (param $msg i32) (param $code i32)
    (global.set $line_len (i32.const 0))
    (call $puts (local.get $msg))
    (drop (call $flush (i32.const 2)))
    (call $proc_exit (local.get $code))
    unreachable)

  ;; $put_result appends "n=<N> checksum=<sum>\n".
  (func $put_result (param $n i32) (param $sum i32)
    (call $puts (i32.const 1280))   ;; "n="
    (call $put_u32 (local.get $n))
    (call $puts (i32.const 1344))   ;; " checksum="
    (call $put_u32 (local.get $sum))
    (call $putc (i32.const 10)))

  ;; ------------------------------------------------------------ arguments

  ;; $parse_n parses the NUL-terminated decimal string at $s and returns
  ;; it, or 0 unless it is all digits (at least one) with a value in
  ;; 1..MAX_N. The bound is checked after every digit, so a long string
  ;; cannot overflow.
  (func $parse_n (param $s i32) (result i32)
    (local $c i32)
    (local $v i32)
    (if (i32.eqz (i32.load8_u (local.get $s))) (then (return (i32.const 0))))
    (block $end
      (loop $next
        (local.set $c (i32.load8_u (local.get $s)))
        (br_if $end (i32.eqz (local.get $c)))
        (local.set $c (i32.sub (local.get $c) (i32.const 48)))   ;; '0'
        (if (i32.gt_u (local.get $c) (i32.const 9)) (then (return (i32.const 0))))
        (local.set $v (i32.add (i32.mul (local.get $v) (i32.const 10)) (local.get $c)))
        (if (i32.gt_u (local.get $v) (global.get $MAX_N)) (then (return (i32.const 0))))
        (local.set $s (i32.add (local.get $s) (i32.const 1)))
        (br $next)))
    (local.get $v))

  ;; $read_n returns N from argv[1] (argv[0] is the program name), the
  ;; default without one; a bad N or extra arguments exit 64. The argv
  ;; strings are read to HEAP; it returns the first free address after them
  ;; through the global $heap_end.
  (global $heap_end (mut i32) (i32.const 4096))
  (func $read_n (result i32)
    (local $argc i32)
    (local $buf i32)
    (local $n i32)
    (if (call $args_sizes_get (global.get $ARGC) (global.get $ARGV_SIZE))
      (then (call $fail (i32.const 1856) (i32.const 1))))
    (local.set $argc (i32.load (global.get $ARGC)))
    ;; Pointers first, then the strings they point into.
    (local.set $buf (i32.add (global.get $HEAP) (i32.shl (local.get $argc) (i32.const 2))))
    (global.set $heap_end (i32.add (local.get $buf) (i32.load (global.get $ARGV_SIZE))))
    (call $grow_to (global.get $heap_end))
    (if (call $args_get (global.get $HEAP) (local.get $buf))
      (then (call $fail (i32.const 1856) (i32.const 1))))
    (if (i32.le_u (local.get $argc) (i32.const 1))
      (then (return (global.get $DEFAULT_N))))
    (if (i32.gt_u (local.get $argc) (i32.const 2))
      (then (call $fail (i32.const 1536) (i32.const 64))))
    (local.set $n (call $parse_n (i32.load offset=4 (global.get $HEAP))))
    (if (i32.eqz (local.get $n))
      (then (call $fail (i32.const 1536) (i32.const 64))))
    (local.get $n))

  ;; --------------------------------------------------------------- memory

  ;; $grow_to makes sure linear memory holds at least $end bytes. A refused
  ;; grow (the workload's memory limit) exits 1.
  (func $grow_to (param $end i32)
    (local $pages i32)
    ;; Pages needed, rounding up; $end is far below 4 GiB.
    (local.set $pages
      (i32.sub (i32.shr_u (i32.add (local.get $end) (i32.const 65535)) (i32.const 16))
        (memory.size)))
    (if (i32.gt_s (local.get $pages) (i32.const 0))
      (then
        (if (i32.eq (memory.grow (local.get $pages)) (i32.const -1))
          (then (call $fail (i32.const 1792) (i32.const 1)))))))

  ;; ------------------------------------------------------------ /out

  ;; $find_out returns the fd of the preopened directory named "/out", or
  ;; -1. Preopens are numbered from 3 up; the first fd that is not open
  ;; ends the search.
  (func $find_out (result i32)
    (local $fd i32)
    (local.set $fd (i32.const 3))
    (block $none
      (loop $next
        (br_if $none (call $fd_prestat_get (local.get $fd) (global.get $PRESTAT)))
        ;; A directory (tag 0) whose name is the 4 bytes "/out".
        (if (i32.and
              (i32.eqz (i32.load8_u (global.get $PRESTAT)))
              (i32.eq (i32.load offset=4 (global.get $PRESTAT)) (i32.const 4)))
          (then
            (if (i32.eqz (call $fd_prestat_dir_name (local.get $fd) (global.get $DIRNAME) (i32.const 4)))
              (then
                (if (i32.eq (i32.load (global.get $DIRNAME)) (i32.load (i32.const 1472)))  ;; "/out"
                  (then (return (local.get $fd))))))))
        (local.set $fd (i32.add (local.get $fd) (i32.const 1)))
        (br $next)))
    (i32.const -1))

  ;; $write_result writes "n=<N> checksum=<sum>\n" to /out/result.txt,
  ;; creating or truncating it; any failure exits 1.
  (func $write_result (param $n i32) (param $sum i32)
    (local $dir i32)
    (local $fd i32)
    (local.set $dir (call $find_out))
    (if (i32.lt_s (local.get $dir) (i32.const 0))
      (then (call $fail (i32.const 1600) (i32.const 1))))
    (if (call $path_open
          (local.get $dir)
          (i32.const 0)                 ;; lookupflags: do not follow symlinks
          (i32.const 1408) (i32.const 10)   ;; "result.txt"
          (i32.const 9)                 ;; oflags: CREAT | TRUNC
          (i64.const 64)                ;; rights: fd_write
          (i64.const 0)
          (i32.const 0)                 ;; fdflags
          (global.get $OPENED_FD))
      (then (call $fail (i32.const 1664) (i32.const 1))))
    (local.set $fd (i32.load (global.get $OPENED_FD)))
    (call $put_result (local.get $n) (local.get $sum))
    (if (call $flush (local.get $fd))
      (then (call $fail (i32.const 1728) (i32.const 1))))
    (if (call $fd_close (local.get $fd))
      (then (call $fail (i32.const 1728) (i32.const 1)))))

  ;; ------------------------------------------------------------ the work

  ;; $fill writes $count pseudo-random u32s at $m from a xorshift32 stream
  ;; seeded with $x (nonzero).
  (func $fill (param $m i32) (param $count i32) (param $x i32)
    (local $end i32)
    (local.set $end (i32.add (local.get $m) (i32.shl (local.get $count) (i32.const 2))))
    (loop $next
      (local.set $x (i32.xor (local.get $x) (i32.shl (local.get $x) (i32.const 13))))
      (local.set $x (i32.xor (local.get $x) (i32.shr_u (local.get $x) (i32.const 17))))
      (local.set $x (i32.xor (local.get $x) (i32.shl (local.get $x) (i32.const 5))))
      (i32.store (local.get $m) (local.get $x))
      (local.set $m (i32.add (local.get $m) (i32.const 4)))
      (br_if $next (i32.lt_u (local.get $m) (local.get $end)))))

  ;; $progress prints "progress <q>/4".
  (func $progress (param $q i32)
    (call $puts (i32.const 1024))   ;; "progress "
    (call $put_u32 (local.get $q))
    (call $puts (i32.const 1088))   ;; "/4\n"
    (drop (call $flush (i32.const 1))))

  ;; $matmul sets C = A·B (mod 2^32) for N×N row-major matrices, in i-k-j
  ;; order so the inner loop walks rows of B and C. C must start zeroed.
  ;; After each row it prints the quarters completed so far, so every N
  ;; prints exactly "progress 1/4" .. "progress 4/4".
  (func $matmul (param $a i32) (param $b i32) (param $c i32) (param $n i32)
    (local $i i32)
    (local $k i32)
    (local $row i32)     ;; bytes per row
    (local $rowc i32)    ;; &C[i][0]
    (local $aik i32)
    (local $pb i32)
    (local $pc i32)
    (local $endc i32)
    (local $shown i32)   ;; quarters printed
    (local.set $row (i32.shl (local.get $n) (i32.const 2)))
    (loop $rows
      (local.set $rowc (i32.add (local.get $c) (i32.mul (local.get $i) (local.get $row))))
      (local.set $endc (i32.add (local.get $rowc) (local.get $row)))
      (local.set $k (i32.const 0))
      (loop $ks
        ;; C[i][*] += A[i][k] * B[k][*]
        (local.set $aik
          (i32.load (i32.add (local.get $a)
            (i32.shl (i32.add (i32.mul (local.get $i) (local.get $n)) (local.get $k)) (i32.const 2)))))
        (local.set $pb (i32.add (local.get $b) (i32.mul (local.get $k) (local.get $row))))
        (local.set $pc (local.get $rowc))
        (loop $js
          (i32.store (local.get $pc)
            (i32.add (i32.load (local.get $pc))
              (i32.mul (local.get $aik) (i32.load (local.get $pb)))))
          (local.set $pb (i32.add (local.get $pb) (i32.const 4)))
          (local.set $pc (i32.add (local.get $pc) (i32.const 4)))
          (br_if $js (i32.lt_u (local.get $pc) (local.get $endc))))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br_if $ks (i32.lt_u (local.get $k) (local.get $n))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      ;; Quarters done: floor(4*(i+1)/N), catching up when N < 4.
      (block $caught_up
        (loop $quarters
          (br_if $caught_up
            (i32.ge_u (local.get $shown)
              (i32.div_u (i32.shl (local.get $i) (i32.const 2)) (local.get $n))))
          (local.set $shown (i32.add (local.get $shown) (i32.const 1)))
          (call $progress (local.get $shown))
          (br $quarters)))
      (br_if $rows (i32.lt_u (local.get $i) (local.get $n)))))

  ;; $checksum is FNV-1a over the $count u32 words at $m (a word at a
  ;; time, not a byte).
  (func $checksum (param $m i32) (param $count i32) (result i32)
    (local $h i32)
    (local $end i32)
    (local.set $h (i32.const 2166136261))
    (local.set $end (i32.add (local.get $m) (i32.shl (local.get $count) (i32.const 2))))
    (loop $next
      (local.set $h (i32.mul (i32.xor (local.get $h) (i32.load (local.get $m))) (i32.const 16777619)))
      (local.set $m (i32.add (local.get $m) (i32.const 4)))
      (br_if $next (i32.lt_u (local.get $m) (local.get $end))))
    (local.get $h))

  (func (export "_start")
    (local $n i32)
    (local $count i32)   ;; N*N
    (local $a i32)
    (local $b i32)
    (local $c i32)
    (local $sum i32)
    (local.set $n (call $read_n))
    (call $puts (i32.const 1152))   ;; "start: n="
    (call $put_u32 (local.get $n))
    (call $putc (i32.const 10))
    (drop (call $flush (i32.const 1)))

    ;; A, B and C after the argv strings, 16-byte aligned.
    (local.set $count (i32.mul (local.get $n) (local.get $n)))
    (local.set $a (i32.and (i32.add (global.get $heap_end) (i32.const 15)) (i32.const -16)))
    (local.set $b (i32.add (local.get $a) (i32.shl (local.get $count) (i32.const 2))))
    (local.set $c (i32.add (local.get $b) (i32.shl (local.get $count) (i32.const 2))))
    (call $grow_to (i32.add (local.get $c) (i32.shl (local.get $count) (i32.const 2))))
    (memory.fill (local.get $c) (i32.const 0) (i32.shl (local.get $count) (i32.const 2)))

    (call $fill (local.get $a) (local.get $count) (i32.const 0x9E3779B9))
    (call $fill (local.get $b) (local.get $count) (i32.const 0x7F4A7C15))
    (call $matmul (local.get $a) (local.get $b) (local.get $c) (local.get $n))
    (local.set $sum (call $checksum (local.get $c) (local.get $count)))

    (call $write_result (local.get $n) (local.get $sum))
    (call $puts (i32.const 1216))   ;; "done: "
    (call $put_result (local.get $n) (local.get $sum))
    (drop (call $flush (i32.const 1)))))
