;; The flame tree's number columns decoded and the tree laid out, in
;; WebAssembly: what flame/wire.ts (readPacked32, readPacked) and
;; flame/model.ts (layout) do in JavaScript, run by flame/treewasm.ts. A
;; page's first flame graph is read before the engine has warmed up to its
;; JavaScript; this code is compiled before it runs (the benchmark
;; profile's whole graph, 141k nodes, decoded and laid out in a cold Node:
;; 26-29 ms in JavaScript, 14-18 ms with this, names included).
;; web/scripts/wasm.mjs assembles it into src/gen/flame_tree_wasm.ts.
;;
;; Every function reads and writes the memory the caller gives: the tree's
;; bytes, then the arrays, at addresses the caller chose. Each returns -1
;; where JavaScript would throw; the caller then runs the JavaScript, which
;; says why.
(module
  (memory (import "js" "mem") 1)

  ;; count(s, e): the varints in [s, e), each ending at a byte under 0x80;
  ;; eight bytes at a time.
  (func (export "count") (param $s i32) (param $e i32) (result i32)
    (local $n i32)
    (block $tail
      (loop $words
        (br_if $tail (i32.gt_u (i32.add (local.get $s) (i32.const 8)) (local.get $e)))
        (local.set $n (i32.add (local.get $n)
          (i32.sub (i32.const 8) (i32.wrap_i64 (i64.popcnt (i64.and (i64.load (local.get $s)) (i64.const 0x8080808080808080)))))))
        (local.set $s (i32.add (local.get $s) (i32.const 8)))
        (br $words)))
    (block $done
      (loop $bytes
        (br_if $done (i32.ge_u (local.get $s) (local.get $e)))
        (local.set $n (i32.add (local.get $n) (i32.lt_u (i32.load8_u (local.get $s)) (i32.const 0x80))))
        (local.set $s (i32.add (local.get $s) (i32.const 1)))
        (br $bytes)))
    (local.get $n))

  ;; u32(s, e, out): decodes the varints in [s, e) as 32-bit values (a
  ;; longer one keeps its low 32 bits) into out, four bytes each; returns
  ;; the address after the last, or -1 if one is truncated or too long.
  (func (export "u32") (param $s i32) (param $e i32) (param $out i32) (result i32)
    (local $c i32) (local $x i32) (local $shift i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $s) (local.get $e)))
        (local.set $c (i32.load8_u (local.get $s)))
        (local.set $s (i32.add (local.get $s) (i32.const 1)))
        (local.set $x (i32.and (local.get $c) (i32.const 0x7f)))
        (local.set $shift (i32.const 7))
        (block $last
          (loop $more
            (br_if $last (i32.lt_u (local.get $c) (i32.const 0x80)))
            (if (i32.or (i32.ge_u (local.get $s) (local.get $e)) (i32.gt_u (local.get $shift) (i32.const 63)))
              (then (return (i32.const -1))))
            (local.set $c (i32.load8_u (local.get $s)))
            (local.set $s (i32.add (local.get $s) (i32.const 1)))
            (if (i32.lt_u (local.get $shift) (i32.const 32))
              (then (local.set $x (i32.or (local.get $x) (i32.shl (i32.and (local.get $c) (i32.const 0x7f)) (local.get $shift))))))
            (local.set $shift (i32.add (local.get $shift) (i32.const 7)))
            (br $more)))
        (i32.store (local.get $out) (local.get $x))
        (local.set $out (i32.add (local.get $out) (i32.const 4)))
        (br $next)))
    (local.get $out))

  ;; f64(s, e, out): the same for 64-bit values, stored as float64 (exact
  ;; up to 2^53, rounded once above); eight bytes each.
  (func (export "f64") (param $s i32) (param $e i32) (param $out i32) (result i32)
    (local $c i32) (local $x i64) (local $shift i64)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $s) (local.get $e)))
        (local.set $c (i32.load8_u (local.get $s)))
        (local.set $s (i32.add (local.get $s) (i32.const 1)))
        (local.set $x (i64.extend_i32_u (i32.and (local.get $c) (i32.const 0x7f))))
        (local.set $shift (i64.const 7))
        (block $last
          (loop $more
            (br_if $last (i32.lt_u (local.get $c) (i32.const 0x80)))
            (if (i32.or (i32.ge_u (local.get $s) (local.get $e)) (i64.gt_u (local.get $shift) (i64.const 63)))
              (then (return (i32.const -1))))
            (local.set $c (i32.load8_u (local.get $s)))
            (local.set $s (i32.add (local.get $s) (i32.const 1)))
            (local.set $x (i64.or (local.get $x) (i64.shl (i64.extend_i32_u (i32.and (local.get $c) (i32.const 0x7f))) (local.get $shift))))
            (local.set $shift (i64.add (local.get $shift) (i64.const 7)))
            (br $more)))
        (f64.store (local.get $out) (f64.convert_i64_u (local.get $x)))
        (local.set $out (i32.add (local.get $out) (i32.const 8)))
        (br $next)))
    (local.get $out))

  ;; layout(n, names, name, value, depth, x, end, parent, self, stack): the
  ;; pass of flame/model.ts's layout over n nodes whose columns are at name,
  ;; value and depth, into x, end, parent and self (stack: room for n
  ;; int32s, the open nodes). Returns the deepest depth, or -1 if the tree
  ;; is not a valid pre-order tree or a node names one of more than names.
  (func (export "layout") (param $n i32) (param $names i32) (param $name i32) (param $value i32) (param $depth i32)
        (param $x i32) (param $end i32) (param $parent i32) (param $self i32) (param $stack i32) (result i32)
    (local $i i32) (local $d i32) (local $sp i32) (local $p i32) (local $max i32) (local $top i32)
    (block $done
      (loop $node
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $d (i32.load (i32.add (local.get $depth) (i32.shl (local.get $i) (i32.const 2)))))
        (if (i32.ge_u (i32.load (i32.add (local.get $name) (i32.shl (local.get $i) (i32.const 2)))) (local.get $names))
          (then (return (i32.const -1))))
        ;; self[i] = value[i]
        (f64.store (i32.add (local.get $self) (i32.shl (local.get $i) (i32.const 3)))
          (f64.load (i32.add (local.get $value) (i32.shl (local.get $i) (i32.const 3)))))
        ;; node 0 alone at depth 0
        (if (i32.ne (i32.eqz (local.get $i)) (i32.eqz (local.get $d)))
          (then (return (i32.const -1))))
        ;; close the open nodes at depth >= d
        (block $closed
          (loop $close
            (br_if $closed (i32.eqz (local.get $sp)))
            (local.set $top (i32.load (i32.add (local.get $stack) (i32.shl (i32.sub (local.get $sp) (i32.const 1)) (i32.const 2)))))
            (br_if $closed (i32.lt_u (i32.load (i32.add (local.get $depth) (i32.shl (local.get $top) (i32.const 2)))) (local.get $d)))
            (i32.store (i32.add (local.get $end) (i32.shl (local.get $top) (i32.const 2))) (local.get $i))
            (local.set $sp (i32.sub (local.get $sp) (i32.const 1)))
            (br $close)))
        (if (i32.ne (local.get $sp) (local.get $d))
          (then (return (i32.const -1))))
        (local.set $p (i32.const -1))
        (if (local.get $sp)
          (then (local.set $p (i32.load (i32.add (local.get $stack) (i32.shl (i32.sub (local.get $sp) (i32.const 1)) (i32.const 2)))))))
        (i32.store (i32.add (local.get $parent) (i32.shl (local.get $i) (i32.const 2))) (local.get $p))
        (if (i32.ge_s (local.get $p) (i32.const 0))
          (then
            ;; x[i] = x[p] + value[p] - self[p]; self[p] -= value[i]
            (f64.store (i32.add (local.get $x) (i32.shl (local.get $i) (i32.const 3)))
              (f64.sub
                (f64.add
                  (f64.load (i32.add (local.get $x) (i32.shl (local.get $p) (i32.const 3))))
                  (f64.load (i32.add (local.get $value) (i32.shl (local.get $p) (i32.const 3)))))
                (f64.load (i32.add (local.get $self) (i32.shl (local.get $p) (i32.const 3))))))
            (f64.store (i32.add (local.get $self) (i32.shl (local.get $p) (i32.const 3)))
              (f64.sub
                (f64.load (i32.add (local.get $self) (i32.shl (local.get $p) (i32.const 3))))
                (f64.load (i32.add (local.get $value) (i32.shl (local.get $i) (i32.const 3))))))))
        (i32.store (i32.add (local.get $stack) (i32.shl (local.get $sp) (i32.const 2))) (local.get $i))
        (local.set $sp (i32.add (local.get $sp) (i32.const 1)))
        (if (i32.gt_u (local.get $d) (local.get $max)) (then (local.set $max (local.get $d))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $node)))
    ;; close the rest
    (block $closed
      (loop $close
        (br_if $closed (i32.eqz (local.get $sp)))
        (local.set $sp (i32.sub (local.get $sp) (i32.const 1)))
        (i32.store (i32.add (local.get $end) (i32.shl (i32.load (i32.add (local.get $stack) (i32.shl (local.get $sp) (i32.const 2)))) (i32.const 2))) (local.get $n))
        (br $close)))
    (local.get $max))
)
