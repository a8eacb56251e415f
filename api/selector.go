package api

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/fleetscope/fleetscope"
)

// Label selectors as Pyroscope (and Prometheus) write them:
// {service_name="checkout", env!="dev", hostname=~"web-.*"}.

// matchOp is a selector condition's operator.
type matchOp int

const (
	opEqual     matchOp = iota // =
	opNotEqual                 // !=
	opRegexp                   // =~
	opNotRegexp                // !~
)

func (o matchOp) String() string { return [...]string{"=", "!=", "=~", "!~"}[o] }

// matcher is one condition of a label selector.
type matcher struct {
	name  string
	op    matchOp
	value string
	re    *regexp.Regexp // the value anchored (^(?:value)$), for =~ and !~
}

// matches reports whether a label's value satisfies m; a series without
// the label has the value "" (Prometheus' rule: {env=""} selects series
// without env, {env!="prod"} those without env too).
func (m matcher) matches(v string) bool {
	switch m.op {
	case opEqual:
		return v == m.value
	case opNotEqual:
		return v != m.value
	case opRegexp:
		return m.re.MatchString(v)
	default:
		return !m.re.MatchString(v)
	}
}

func (m matcher) String() string { return m.name + m.op.String() + strconv.Quote(m.value) }

// Bounds on a selector, so that one request cannot ask for unbounded
// parsing or regular expression compilation.
const (
	maxSelectorBytes = 16 << 10
	maxMatchers      = 64
)

// parseSelector reads a label selector: `{name op "value", ...}` with the
// operators =, !=, =~ and !~ (regular expressions in Go's RE2 syntax, as
// Prometheus', matching the whole value); values in double or single
// quotes (with Go's escapes) or in backticks (raw); names as Prometheus
// writes them, or quoted; a trailing comma allowed. A name before the
// braces is the __name__ to match (Pyroscope's profile name), or, when it
// has colons, the __profile_type__; "" and "{}" select everything.
// Returns EINVALID saying what is wrong and where.
func parseSelector(s string) ([]matcher, error) {
	if len(s) > maxSelectorBytes {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "label selector of %d bytes: at most %d", len(s), maxSelectorBytes)
	}
	p := &selectorParser{s: s}
	ms, err := p.parse()
	if err != nil {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "label selector %s: %v", quoteShort(s), err)
	}
	return ms, nil
}

// quoteShort quotes s for an error message, cut to 200 bytes.
func quoteShort(s string) string {
	if len(s) > 200 {
		cut := 200
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return strconv.Quote(s[:cut]) + "…"
	}
	return strconv.Quote(s)
}

type selectorParser struct {
	s   string
	pos int
}

func (p *selectorParser) errorf(format string, args ...any) error {
	return fmt.Errorf("at offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *selectorParser) space() {
	for p.pos < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.pos]) >= 0 {
		p.pos++
	}
}

func (p *selectorParser) parse() ([]matcher, error) {
	var out []matcher
	p.space()
	if p.pos == len(p.s) {
		return nil, nil
	}
	if c := p.s[p.pos]; c != '{' {
		name := p.ident(true)
		if name == "" {
			return nil, p.errorf("expected '{'")
		}
		label := "__name__"
		if strings.Contains(name, ":") {
			label = "__profile_type__"
		}
		out = append(out, matcher{name: label, op: opEqual, value: name})
		p.space()
		if p.pos == len(p.s) {
			return out, nil
		}
		if p.s[p.pos] != '{' {
			return nil, p.errorf("expected '{' after %q", name)
		}
	}
	p.pos++ // '{'
	for {
		p.space()
		if p.pos == len(p.s) {
			return nil, p.errorf("expected '}'")
		}
		if p.s[p.pos] == '}' {
			p.pos++
			break
		}
		m, err := p.matcher()
		if err != nil {
			return nil, err
		}
		if len(out) == maxMatchers {
			return nil, p.errorf("more than %d conditions", maxMatchers)
		}
		out = append(out, m)
		p.space()
		if p.pos < len(p.s) && p.s[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.s) && p.s[p.pos] == '}' {
			p.pos++
			break
		}
		return nil, p.errorf("expected ',' or '}'")
	}
	p.space()
	if p.pos != len(p.s) {
		return nil, p.errorf("unexpected %q after '}'", p.s[p.pos:min(len(p.s), p.pos+20)])
	}
	return out, nil
}

// ident reads a name: [A-Za-z_][A-Za-z0-9_.]*, and colons too in a metric
// name.
func (p *selectorParser) ident(metric bool) string {
	start := p.pos
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || p.pos > start && (c >= '0' && c <= '9' || c == '.') || metric && c == ':' {
			p.pos++
			continue
		}
		break
	}
	return p.s[start:p.pos]
}

func (p *selectorParser) matcher() (matcher, error) {
	var m matcher
	if c := p.s[p.pos]; c == '"' || c == '\'' || c == '`' {
		name, err := p.str()
		if err != nil {
			return m, err
		}
		m.name = name
	} else {
		m.name = p.ident(false)
	}
	if m.name == "" {
		return m, p.errorf("expected a label name")
	}
	p.space()
	switch rest := p.s[p.pos:]; {
	case strings.HasPrefix(rest, "=~"):
		m.op = opRegexp
	case strings.HasPrefix(rest, "!~"):
		m.op = opNotRegexp
	case strings.HasPrefix(rest, "!="):
		m.op = opNotEqual
	case strings.HasPrefix(rest, "="):
		m.op = opEqual
	default:
		return m, p.errorf("expected =, !=, =~ or !~ after %q", m.name)
	}
	p.pos += len(m.op.String())
	p.space()
	if p.pos == len(p.s) {
		return m, p.errorf("expected a quoted value for %q", m.name)
	}
	v, err := p.str()
	if err != nil {
		return m, err
	}
	m.value = v
	if m.op == opRegexp || m.op == opNotRegexp {
		if m.re, err = regexp.Compile("^(?:" + v + ")$"); err != nil {
			return m, fmt.Errorf("%s: %v", m, err)
		}
	}
	return m, nil
}

// str reads a quoted string: "..." or '...' with Go's escapes, or `...`.
func (p *selectorParser) str() (string, error) {
	q := p.s[p.pos]
	if q != '"' && q != '\'' && q != '`' {
		return "", p.errorf("expected a quoted string")
	}
	start := p.pos
	p.pos++
	if q == '`' {
		end := strings.IndexByte(p.s[p.pos:], '`')
		if end < 0 {
			p.pos = start
			return "", p.errorf("unterminated string")
		}
		v := p.s[p.pos : p.pos+end]
		p.pos += end + 1
		return v, nil
	}
	var b strings.Builder
	for {
		rest := p.s[p.pos:]
		if rest == "" || rest[0] == '\n' {
			p.pos = start
			return "", p.errorf("unterminated string")
		}
		if rest[0] == q {
			p.pos++
			return b.String(), nil
		}
		if r, size := utf8.DecodeRuneInString(rest); r == utf8.RuneError && size == 1 {
			return "", p.errorf("invalid UTF-8")
		}
		r, multibyte, tail, err := strconv.UnquoteChar(rest, q)
		if err != nil {
			return "", p.errorf("bad escape in a string")
		}
		if multibyte || r < utf8.RuneSelf {
			b.WriteRune(r)
		} else {
			b.WriteByte(byte(r)) // \xHH or \NNN: a byte, as Go and PromQL read it
		}
		p.pos += len(rest) - len(tail)
	}
}
