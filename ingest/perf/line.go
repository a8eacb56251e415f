package perf

import "bytes"

// This file classifies single lines of `perf script` output exactly as
// stackcollapse-perf.pl's regular expressions do. Each matcher documents the
// Perl expression it stands for; the hand-written versions exist because they
// are several times faster than regexp and because Go's RE2 has no look-ahead.
// line_test.go checks them against regexp-based references.

// isSpace is Perl's \s on byte strings: space, \t, \n, \v, \f, \r.
func isSpace(c byte) bool { return class[c]&space != 0 }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isWord is Perl's \w on byte strings (no locale, no unicode_strings).
func isWord(c byte) bool { return class[c]&word != 0 }

// class holds each byte's classes: one load instead of a chain of
// comparisons in the loops that run over every stack line.
var class = func() (t [256]uint8) {
	for c := range 256 {
		b := byte(c)
		if b == ' ' || (b >= '\t' && b <= '\r') {
			t[c] |= space
		}
		if b == '_' || isDigit(b) || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') {
			t[c] |= word
		}
	}
	return t
}()

const (
	space = 1 << iota
	word
)

// header is what the sample-start expression captures.
type header struct {
	comm []byte // $1: process name, may contain spaces
	pid  []byte // $2
	tid  []byte // $3, nil when absent
	end  int    // offset just past the match (after the trailing whitespace)
}

// matchHeader emulates /^(\S.+?)\s+(\d+)\/*(\d+)*\s+/.
//
// The lazy process name ends at the first whitespace run (at offset >= 2) that
// is followed by digits and then whitespace, or by digits, slashes, optional
// digits and whitespace. Backtracking into the digit runs can never produce a
// different match, so trying each whitespace run once is exact.
func matchHeader(line []byte) (h header, ok bool) {
	if len(line) < 3 || isSpace(line[0]) {
		return h, false
	}
	for k := 2; k < len(line); k++ {
		if !isSpace(line[k]) {
			continue
		}
		j := k
		for j < len(line) && isSpace(line[j]) {
			j++
		}
		d := j
		for d < len(line) && isDigit(line[d]) {
			d++
		}
		if d > j && d < len(line) {
			if isSpace(line[d]) {
				return header{comm: line[:k], pid: line[j:d], end: skipSpace(line, d)}, true
			}
			if line[d] == '/' {
				s := d
				for s < len(line) && line[s] == '/' {
					s++
				}
				e := s
				for e < len(line) && isDigit(line[e]) {
					e++
				}
				if e < len(line) && isSpace(line[e]) {
					h = header{comm: line[:k], pid: line[j:d], end: skipSpace(line, e)}
					if e > s {
						h.tid = line[s:e]
					}
					return h, true
				}
			}
		}
		k = j - 1 // the rest of this whitespace run gives the same result
	}
	return h, false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// matchEvent emulates /:\s*(\d+)*\s+(\S+):\s*$/ and returns $2 (the event)
// and $1 (the period, nil when absent).
//
// The event is the last whitespace-separated token, which must end in ':';
// before it only whitespace, optional digits and whitespace may stand back to
// a ':' (the one ending the timestamp).
func matchEvent(line []byte) (event, period []byte, ok bool) {
	e := len(line)
	for e > 0 && isSpace(line[e-1]) {
		e--
	}
	if e < 2 || line[e-1] != ':' {
		return nil, nil, false
	}
	c := e - 1
	for c > 0 && !isSpace(line[c-1]) {
		c--
	}
	if c == 0 || c == e-1 {
		return nil, nil, false
	}
	i := c
	for i > 0 && isSpace(line[i-1]) {
		i--
	}
	d := i
	for d > 0 && isDigit(line[d-1]) {
		d--
	}
	p := d
	if d < i { // digits: whitespace may stand between them and the ':'
		for p > 0 && isSpace(line[p-1]) {
			p--
		}
	}
	if p == 0 || line[p-1] != ':' {
		return nil, nil, false
	}
	if d < i {
		period = line[d:i]
	}
	return line[c : e-1], period, true
}

// frameLine is what the stack-line expression captures.
type frameLine struct {
	pc   []byte // $1
	fn   []byte // $2, the raw function (may hold "a->b" inline chains and +0x offsets)
	mod  []byte // $3, the module (DSO)
	tail []byte // the line from the function on: everything tidying depends on
	// keyed: the function starts right after the address and its spaces,
	// so the match is a function of frameKey's key alone.
	keyed bool
}

// matchFrame emulates /^\s*(\w+)\s*(.+) \((\S*)\)/.
//
// The greedy (.+) ends at the last " (" whose following non-space run holds
// a ')'; $3 runs to the last ')' of that run. The function then starts as far
// right as the greedy \w+ and \s* allow while leaving (.+) at least one byte.
func matchFrame(line []byte) (f frameLine, ok bool) {
	s := skipSpace(line, 0)
	w := s
	for w < len(line) && isWord(line[w]) {
		w++
	}
	if w == s {
		return f, false
	}
	m := skipSpace(line, w)
	// Find Q, the last valid " (".
	q, r := -1, -1
	for i := len(line) - 1; i > w; i-- {
		if line[i] != '(' || line[i-1] != ' ' {
			continue
		}
		last := -1
		for j := i + 1; j < len(line) && !isSpace(line[j]); j++ {
			if line[j] == ')' {
				last = j
			}
		}
		if last >= 0 {
			q, r = i-1, last
			break
		}
	}
	if q < 0 {
		return f, false
	}
	a := min(m, q-1)
	if a < s+1 {
		return f, false
	}
	return frameLine{pc: line[s:min(a, w)], fn: line[a:q], mod: line[q+2 : r], tail: line[a:], keyed: a == m}, true
}

// frameKey returns the part of a would-be stack line from its function on
// (from its address on if withPC): the key under which its folding can be
// cached. matchFrame's result depends only on this part whenever the
// function starts where the leading address and its spaces end
// (frameLine.keyed).
func frameKey(line []byte, withPC bool) (key []byte, ok bool) {
	s := skipSpace(line, 0)
	w := s
	for w < len(line) && isWord(line[w]) {
		w++
	}
	if w == s {
		return nil, false
	}
	if withPC {
		return line[s:], true
	}
	return line[skipSpace(line, w):], true
}

// Options select stackcollapse-perf.pl's flags.
type Options struct {
	PID    bool // --pid: process name becomes comm-pid
	TID    bool // --tid: process name becomes comm-pid/tid
	Kernel bool // --kernel: annotate kernel frames with _[k]
	JIT    bool // --jit: annotate JIT frames with _[j]
	Addrs  bool // --addrs: keep raw addresses of unknown frames
	// EventFilter keeps only samples of this event; empty means the first
	// event seen, as the Perl script does.
	EventFilter string
}

// Frame kind bits, kept so annotations can be added on demand.
const (
	kindKernel = 1 // module starts with '[' or ends in vmlinux, and is not unknown
	kindJIT    = 2 // module is a /tmp/perf-PID.map
)

type tidyFrame struct {
	name []byte
	kind uint8 // kind bits from the module; zero for the inlined parts of a chain
}

// appendAnnotation adds _[k] or _[j] as the Perl script's elsif chain does.
func appendAnnotation(name []byte, kind uint8, kernel, jit bool) []byte {
	switch {
	case kernel && kind&kindKernel != 0:
		return append(name, "_[k]"...)
	case jit && kind&kindJIT != 0 && !bytes.Contains(name, []byte("_[j]")):
		return append(name, "_[j]"...)
	}
	return name
}

// tidy turns one matched stack line into its folded frames, outermost first,
// exactly as the Perl loop body does. It returns nil and skip=true for
// lines the script ignores (process-name frames).
// Annotations are applied only if annotate is set; kind always records the
// module's kind so they can be applied later.
func tidy(f frameLine, java bool, opts Options, annotate bool, out []tidyFrame) (frames []tidyFrame, skip bool) {
	raw := stripOffset(f.fn)
	if len(raw) > 0 && raw[0] == '(' {
		return out, true
	}
	parts := splitInline(raw)
	kernel := (len(f.mod) > 0 && f.mod[0] == '[' || bytes.HasSuffix(f.mod, []byte("vmlinux"))) &&
		!bytes.Contains(f.mod, []byte("unknown"))
	jit := isJITModule(f.mod)
	for i, p := range parts {
		var fn []byte
		if string(p) == "[unknown]" {
			var name []byte
			if string(f.mod) != "[unknown]" {
				name = f.mod
				if k := bytes.LastIndexByte(name, '/'); k >= 0 {
					name = name[k+1:]
				}
			} else {
				name = []byte("unknown")
			}
			fn = append(fn, '[')
			fn = append(fn, name...)
			if opts.Addrs {
				fn = append(fn, " <"...)
				fn = append(fn, f.pc...)
				fn = append(fn, '>')
			}
			fn = append(fn, ']')
		} else {
			fn = append(fn, p...)
		}
		fn = tidyGeneric(fn)
		if java && bytes.IndexByte(fn, '/') >= 0 && len(fn) > 0 && fn[0] == 'L' {
			fn = fn[1:]
		}
		var kind uint8
		if i > 0 {
			if !bytes.Contains(fn, []byte("_[i]")) {
				fn = append(fn, "_[i]"...)
			}
		} else {
			if kernel {
				kind |= kindKernel
			}
			if jit {
				kind |= kindJIT
			}
			if annotate {
				fn = appendAnnotation(fn, kind, opts.Kernel, opts.JIT)
			}
		}
		out = append(out, tidyFrame{name: fn, kind: kind})
	}
	return out, false
}

// stripOffset emulates s/\+0x[\da-f]+$//.
func stripOffset(b []byte) []byte {
	i := len(b)
	for i > 0 && (isDigit(b[i-1]) || (b[i-1] >= 'a' && b[i-1] <= 'f')) {
		i--
	}
	if i < len(b) && i >= 3 && b[i-1] == 'x' && b[i-2] == '0' && b[i-3] == '+' {
		return b[:i-3]
	}
	return b
}

// splitInline emulates Perl's split /\->/: trailing empty fields are dropped.
func splitInline(b []byte) [][]byte {
	parts := bytes.Split(b, []byte("->"))
	for len(parts) > 0 && len(parts[len(parts)-1]) == 0 {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// isJITModule emulates m:/tmp/perf-\d+\.map:.
func isJITModule(mod []byte) bool {
	for {
		i := bytes.Index(mod, []byte("/tmp/perf-"))
		if i < 0 {
			return false
		}
		rest := mod[i+len("/tmp/perf-"):]
		d := 0
		for d < len(rest) && isDigit(rest[d]) {
			d++
		}
		if d > 0 && bytes.HasPrefix(rest[d:], []byte(".map")) {
			return true
		}
		mod = mod[i+1:]
	}
}

// tidyGeneric emulates the $tidy_generic block:
//
//	s/;/:/g; s/\((?!anonymous namespace\)).*// unless m/\.\(.*\)\./; tr/"'//d
func tidyGeneric(fn []byte) []byte {
	for i, c := range fn {
		if c == ';' {
			fn[i] = ':'
		}
	}
	if !isGoMethod(fn) {
		for i := 0; i < len(fn); i++ {
			if fn[i] == '(' && !bytes.HasPrefix(fn[i+1:], []byte("anonymous namespace)")) {
				fn = fn[:i]
				break
			}
		}
	}
	if bytes.IndexByte(fn, '"') >= 0 || bytes.IndexByte(fn, '\'') >= 0 {
		out := fn[:0]
		for _, c := range fn {
			if c != '"' && c != '\'' {
				out = append(out, c)
			}
		}
		fn = out
	}
	return fn
}

// isGoMethod emulates m/\.\(.*\)\./.
func isGoMethod(fn []byte) bool {
	i := bytes.Index(fn, []byte(".("))
	if i < 0 {
		return false
	}
	return bytes.LastIndex(fn[i+2:], []byte(").")) >= 0
}

// pname builds the root frame: comm, comm-pid or comm-pid/tid with spaces as
// underscores. When perf printed no pid/tid pair, the pid is "?" and the one
// number is the tid (Perl treats a tid of "0" as absent too).
func pname(dst []byte, h header, opts Options) []byte {
	pid, tid := h.pid, h.tid
	if len(tid) == 0 || string(tid) == "0" {
		tid, pid = pid, []byte("?")
	}
	start := len(dst)
	dst = append(dst, h.comm...)
	if opts.TID {
		dst = append(dst, '-')
		dst = append(dst, pid...)
		dst = append(dst, '/')
		dst = append(dst, tid...)
	} else if opts.PID {
		dst = append(dst, '-')
		dst = append(dst, pid...)
	}
	for i := start; i < len(dst); i++ {
		if dst[i] == ' ' {
			dst[i] = '_'
		}
	}
	return dst
}
