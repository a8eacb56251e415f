package deploy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"go/build"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/fleetscope/fleetscope/cmd/fleetscope/server"
)

const (
	composePath    = "../docker-compose.yml"
	dockerfilePath = "Dockerfile"
	envExamplePath = "fleetscope.env.example"
)

// required are the variables the fleetscope service cannot run without.
var required = []string{
	"FLEETSCOPE_ADDR",
	"FLEETSCOPE_DATABASE_URL",
	"FLEETSCOPE_BLOB_URL",
	"FLEETSCOPE_S3_ACCESS_KEY",
	"FLEETSCOPE_S3_SECRET_KEY",
}

// ---- docker-compose.yml ----------------------------------------------------

type composeFile struct {
	Services map[string]composeService `yaml:"services"`
}

type composeService struct {
	Image       string         `yaml:"image"`
	Build       any            `yaml:"build"`
	Command     any            `yaml:"command"`
	Environment any            `yaml:"environment"`
	DependsOn   any            `yaml:"depends_on"`
	Healthcheck map[string]any `yaml:"healthcheck"`
	Ports       []any          `yaml:"ports"`
}

// compose is docker-compose.yml as `docker compose` sees it with no
// variables set: the file must work out of the box, so every ${VAR} needs a
// default.
type compose struct {
	t        *testing.T
	services map[string]composeService
}

func loadCompose(t *testing.T) compose {
	t.Helper()
	b, err := os.ReadFile(composePath)
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", composePath, err)
	}
	if len(f.Services) == 0 {
		t.Fatalf("%s: no services", composePath)
	}
	return compose{t: t, services: f.Services}
}

// service returns the named service, failing the test if there is none.
func (c compose) service(name string) composeService {
	c.t.Helper()
	s, ok := c.services[name]
	if !ok {
		c.t.Fatalf("%s: no service %q", composePath, name)
	}
	return s
}

// str interpolates a value of the file.
func (c compose) str(v string) string {
	c.t.Helper()
	s, err := interpolate(v, nil)
	if err != nil {
		c.t.Fatalf("%s: %v", composePath, err)
	}
	return s
}

// env returns a service's environment, interpolated. A variable listed
// without a value (passed through from the host) maps to "".
func (c compose) env(name string) map[string]string {
	c.t.Helper()
	out := map[string]string{}
	switch e := c.service(name).Environment.(type) {
	case nil:
	case map[string]any:
		for k, v := range e {
			if v == nil {
				out[k] = ""
				continue
			}
			out[k] = c.str(fmt.Sprint(v))
		}
	case []any:
		for _, item := range e {
			k, v, _ := strings.Cut(fmt.Sprint(item), "=")
			out[k] = c.str(v)
		}
	default:
		c.t.Fatalf("%s: service %s: environment is a %T", composePath, name, e)
	}
	return out
}

// interpolate expands ${VAR}, ${VAR:-default}, ${VAR-default},
// ${VAR:?err}, ${VAR?err}, ${VAR:+alt}, ${VAR+alt}, $VAR and $$ as docker
// compose does, with the variables in vars (all unset when vars is nil).
func interpolate(s string, vars map[string]string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			b.WriteByte(s[i])
			continue
		}
		rest := s[i+1:]
		switch {
		case strings.HasPrefix(rest, "$"):
			b.WriteByte('$')
			i++
		case strings.HasPrefix(rest, "{"):
			end, depth := -1, 0
			for j := 1; j < len(rest) && end < 0; j++ {
				switch rest[j] {
				case '{':
					depth++
				case '}':
					if depth == 0 {
						end = j
					}
					depth--
				}
			}
			if end < 0 {
				return "", fmt.Errorf("unclosed ${ in %q", s)
			}
			v, err := expand(rest[1:end], vars)
			if err != nil {
				return "", err
			}
			b.WriteString(v)
			i += end + 1
		default:
			n := len(varName.FindString(rest))
			if n == 0 {
				return "", fmt.Errorf("lone $ in %q (write $$)", s)
			}
			b.WriteString(vars[rest[:n]])
			i += n
		}
	}
	return b.String(), nil
}

var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*`)

// expand expands the inside of one ${...}.
func expand(expr string, vars map[string]string) (string, error) {
	name := varName.FindString(expr)
	if name == "" {
		return "", fmt.Errorf("bad variable ${%s}", expr)
	}
	val, set := vars[name]
	op := expr[len(name):]
	for _, o := range []string{":-", ":?", ":+", "-", "?", "+"} {
		if !strings.HasPrefix(op, o) {
			continue
		}
		arg, err := interpolate(op[len(o):], vars)
		if err != nil {
			return "", err
		}
		present := set && (val != "" || !strings.HasPrefix(o, ":"))
		switch o[len(o)-1] {
		case '-':
			if present {
				return val, nil
			}
			return arg, nil
		case '?':
			if present {
				return val, nil
			}
			return "", fmt.Errorf("${%s} is required (%s): give it a default so the file works without a .env", name, arg)
		default: // '+'
			if present {
				return arg, nil
			}
			return "", nil
		}
	}
	if op != "" {
		return "", fmt.Errorf("bad variable ${%s}", expr)
	}
	return val, nil
}

func TestInterpolate(t *testing.T) {
	vars := map[string]string{"SET": "v", "EMPTY": ""}
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"a$$b", "a$b"},
		{"${SET}", "v"},
		{"$SET/x", "v/x"},
		{"${UNSET}", ""},
		{"${UNSET:-d}", "d"},
		{"${EMPTY:-d}", "d"},
		{"${EMPTY-d}", ""},
		{"${SET:-d}", "v"},
		{"${UNSET:-${SET}x}", "vx"},
		{"${SET:+alt}", "alt"},
		{"${UNSET:+alt}", ""},
		{"u:${UNSET:-p}@h", "u:p@h"},
	} {
		got, err := interpolate(tc.in, vars)
		if err != nil || got != tc.want {
			t.Errorf("interpolate(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"${UNSET:?set it}", "${UNSET?x}", "${SET", "$ ", "${1x}", "${SET%x}"} {
		if got, err := interpolate(bad, vars); err == nil {
			t.Errorf("interpolate(%q) = %q, want an error", bad, got)
		}
	}
}

func TestComposeServerEnv(t *testing.T) {
	c := loadCompose(t)
	env := c.env("fleetscope")
	for k := range env {
		if strings.HasPrefix(k, "FLEETSCOPE_") && !slices.Contains(server.Env, k) {
			t.Errorf("service fleetscope sets %s, which the server does not read (server.Env: %v)", k, server.Env)
		}
	}
	for _, k := range required {
		if env[k] == "" {
			t.Errorf("service fleetscope: %s is not set", k)
		}
	}
	if _, err := server.FromEnv(func(k string) string { return env[k] }); err != nil {
		t.Errorf("service fleetscope: the server rejects its environment: %v", err)
	}
}

// TestComposeDatabaseURL checks that the server's database is the postgres
// service, with the user, password and database that service creates.
func TestComposeDatabaseURL(t *testing.T) {
	c := loadCompose(t)
	raw := c.env("fleetscope")["FLEETSCOPE_DATABASE_URL"]
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("FLEETSCOPE_DATABASE_URL %q: %v", raw, err)
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		t.Errorf("FLEETSCOPE_DATABASE_URL %q: scheme %q, want postgres", raw, u.Scheme)
	}
	if u.Hostname() != "postgres" {
		t.Fatalf("FLEETSCOPE_DATABASE_URL %q: host %q, want the postgres service", raw, u.Hostname())
	}
	pg := c.service("postgres")
	if !strings.HasPrefix(c.str(pg.Image), "postgres:") {
		t.Errorf("service postgres: image %q, want postgres:<version>", pg.Image)
	}
	if p := u.Port(); p != "" && p != "5432" {
		t.Errorf("FLEETSCOPE_DATABASE_URL %q: port %s, but the postgres service listens on 5432", raw, p)
	}
	// The URL must carry the credentials and database the image creates.
	penv := c.env("postgres")
	user := cmp(penv["POSTGRES_USER"], "postgres")
	db := cmp(penv["POSTGRES_DB"], user)
	password, _ := u.User.Password()
	if u.User.Username() != user {
		t.Errorf("FLEETSCOPE_DATABASE_URL user %q, but the postgres service creates %q", u.User.Username(), user)
	}
	if password != penv["POSTGRES_PASSWORD"] {
		t.Errorf("FLEETSCOPE_DATABASE_URL password %q, but POSTGRES_PASSWORD is %q", password, penv["POSTGRES_PASSWORD"])
	}
	if got := strings.TrimPrefix(u.Path, "/"); got != db {
		t.Errorf("FLEETSCOPE_DATABASE_URL database %q, but the postgres service creates %q", got, db)
	}
}

// cmp returns s, or def when s is empty.
func cmp(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func TestComposeBlobURL(t *testing.T) {
	c := loadCompose(t)
	env := c.env("fleetscope")
	raw := env["FLEETSCOPE_BLOB_URL"]
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("FLEETSCOPE_BLOB_URL %q: %v", raw, err)
	}
	if u.Scheme != "s3" || u.Host == "" {
		t.Fatalf("FLEETSCOPE_BLOB_URL %q: want s3://bucket?endpoint=minio:9000", raw)
	}
	endpoint := u.Query().Get("endpoint")
	host, port, err := net.SplitHostPort(endpoint)
	if err != nil {
		t.Fatalf("FLEETSCOPE_BLOB_URL %q: endpoint %q: %v", raw, endpoint, err)
	}
	if host != "minio" {
		t.Fatalf("FLEETSCOPE_BLOB_URL %q: endpoint host %q, want the minio service", raw, host)
	}
	minio := c.service("minio")
	if !strings.Contains(c.str(minio.Image), "minio") {
		t.Errorf("service minio: image %q is not MinIO", minio.Image)
	}
	cmd := c.words(minio.Command)
	if !slices.Contains(cmd, "server") {
		t.Errorf("service minio: command %q does not run the server", cmd)
	}
	apiPort := "9000"
	if i := slices.Index(cmd, "--address"); i >= 0 && i+1 < len(cmd) {
		_, apiPort, _ = net.SplitHostPort(cmd[i+1])
	}
	if port != apiPort {
		t.Errorf("FLEETSCOPE_BLOB_URL %q: endpoint port %s, but MinIO serves S3 on %s", raw, port, apiPort)
	}
	if u.Query().Get("insecure") != "true" {
		t.Errorf("FLEETSCOPE_BLOB_URL %q: want insecure=true (MinIO serves plain HTTP here)", raw)
	}
	menv := c.env("minio")
	if env["FLEETSCOPE_S3_ACCESS_KEY"] != menv["MINIO_ROOT_USER"] {
		t.Errorf("FLEETSCOPE_S3_ACCESS_KEY %q, but MINIO_ROOT_USER is %q", env["FLEETSCOPE_S3_ACCESS_KEY"], menv["MINIO_ROOT_USER"])
	}
	if env["FLEETSCOPE_S3_SECRET_KEY"] != menv["MINIO_ROOT_PASSWORD"] {
		t.Errorf("FLEETSCOPE_S3_SECRET_KEY %q, but MINIO_ROOT_PASSWORD is %q", env["FLEETSCOPE_S3_SECRET_KEY"], menv["MINIO_ROOT_PASSWORD"])
	}
	if n := len(menv["MINIO_ROOT_PASSWORD"]); n < 8 {
		t.Errorf("MINIO_ROOT_PASSWORD has %d characters; MinIO refuses fewer than 8", n)
	}
}

// words returns a command as its words (a string is split on spaces).
func (c compose) words(v any) []string {
	switch v := v.(type) {
	case string:
		return strings.Fields(c.str(v))
	case []any:
		var out []string
		for _, w := range v {
			out = append(out, c.str(fmt.Sprint(w)))
		}
		return out
	}
	return nil
}

func TestComposeStartOrder(t *testing.T) {
	c := loadCompose(t)
	deps := map[string]string{}
	switch d := c.service("fleetscope").DependsOn.(type) {
	case []any:
		for _, name := range d {
			deps[fmt.Sprint(name)] = "service_started"
		}
	case map[string]any:
		for name, v := range d {
			cond := "service_started"
			if m, ok := v.(map[string]any); ok && m["condition"] != nil {
				cond = fmt.Sprint(m["condition"])
			}
			deps[name] = cond
		}
	}
	for _, name := range []string{"postgres", "minio"} {
		if deps[name] != "service_healthy" {
			t.Errorf("service fleetscope: depends_on %s: condition %q, want service_healthy", name, deps[name])
		}
		hc := c.service(name).Healthcheck
		test := c.words(hc["test"])
		if len(test) < 2 || hc["disable"] == true || test[0] == "NONE" {
			t.Errorf("service %s: no healthcheck (test %q), so service_healthy never holds", name, test)
		}
	}
}

// composeAddrPort returns the port of the fleetscope service's FLEETSCOPE_ADDR.
func composeAddrPort(t *testing.T, c compose) string {
	t.Helper()
	addr := c.env("fleetscope")["FLEETSCOPE_ADDR"]
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("FLEETSCOPE_ADDR %q: %v", addr, err)
	}
	if host != "" && host != "0.0.0.0" && host != "::" {
		t.Errorf("FLEETSCOPE_ADDR %q: in a container the server must listen on all interfaces (0.0.0.0), or the published port reaches nothing", addr)
	}
	return port
}

func TestComposePorts(t *testing.T) {
	c := loadCompose(t)
	port := composeAddrPort(t, c)
	var targets []string
	for _, p := range c.service("fleetscope").Ports {
		switch p := p.(type) {
		case map[string]any:
			targets = append(targets, c.str(fmt.Sprint(p["target"])))
		default: // [ip:]published:target[/proto], or just target
			s := strings.TrimSuffix(c.str(fmt.Sprint(p)), "/tcp")
			targets = append(targets, s[strings.LastIndex(s, ":")+1:])
		}
	}
	if !slices.Contains(targets, port) {
		t.Errorf("service fleetscope publishes container ports %q, not %s where FLEETSCOPE_ADDR listens", targets, port)
	}
}

func TestComposeBuild(t *testing.T) {
	c := loadCompose(t)
	context, dockerfile := ".", "Dockerfile"
	switch b := c.service("fleetscope").Build.(type) {
	case string:
		context = c.str(b)
	case map[string]any:
		if v, ok := b["context"]; ok {
			context = c.str(fmt.Sprint(v))
		}
		if v, ok := b["dockerfile"]; ok {
			dockerfile = c.str(fmt.Sprint(v))
		}
	default:
		t.Fatalf("service fleetscope: build is %T, want the repository root and deploy/Dockerfile", b)
	}
	root := filepath.Dir(composePath)
	if got, want := filepath.Join(root, context), root; got != want {
		t.Errorf("service fleetscope: build context %q, want the repository root", context)
	}
	if got := filepath.Join(root, context, dockerfile); got != filepath.Join("..", "deploy", dockerfilePath) {
		t.Errorf("service fleetscope: dockerfile %q, want deploy/Dockerfile", dockerfile)
	}
}

// ---- fleetscope.env.example ------------------------------------------------

func TestEnvExample(t *testing.T) {
	f, err := os.Open(envExamplePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env := map[string]string{}
	var names []string
	prevComment := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
			prevComment = false
			continue
		case strings.HasPrefix(line, "#"):
			prevComment = true
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !varName.MatchString(k) || len(varName.FindString(k)) != len(k) {
			t.Errorf("%s:%d: %q is not NAME=value", envExamplePath, n, line)
			continue
		}
		if !prevComment {
			t.Errorf("%s:%d: %s has no comment above it", envExamplePath, n, k)
		}
		if _, dup := env[k]; dup {
			t.Errorf("%s:%d: %s is set twice", envExamplePath, n, k)
		}
		if strings.ContainsAny(v, "\"'&;|<>` ") {
			t.Errorf("%s:%d: %s=%s: quotes or shell characters break one of env_file, --env-file or sourcing", envExamplePath, n, k, v)
		}
		if v == "" {
			t.Errorf("%s:%d: %s has no example value", envExamplePath, n, k)
		}
		env[k] = v
		names = append(names, k)
		prevComment = false
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, k := range server.Env {
		if _, ok := env[k]; !ok {
			t.Errorf("%s does not list %s (in server.Env)", envExamplePath, k)
		}
	}
	for _, k := range names {
		if !slices.Contains(server.Env, k) {
			t.Errorf("%s lists %s, which the server does not read (server.Env: %v)", envExamplePath, k, server.Env)
		}
	}
	if _, err := server.FromEnv(func(k string) string { return env[k] }); err != nil {
		t.Errorf("%s: the server rejects the example: %v", envExamplePath, err)
	}
}

// ---- Dockerfile ------------------------------------------------------------

type instruction struct {
	line int
	cmd  string // upper case
	args string
}

type stage struct {
	image, name string
	body        []instruction
}

// parseDockerfile splits a Dockerfile into stages, joining continued lines
// and dropping comments.
func parseDockerfile(t *testing.T, path string) []stage {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var stages []stage
	var cur strings.Builder
	start := 0
	for i, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur.Len() > 0 && strings.HasPrefix(trimmed, "#") {
			continue // comment inside a continued instruction
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if strings.HasSuffix(trimmed, `\`) {
			cur.WriteString(strings.TrimSuffix(trimmed, `\`) + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		cur.Reset()
		in := instruction{line: start, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			s := stage{image: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) == 0 {
			t.Fatalf("%s:%d: %s before FROM", path, in.line, in.cmd)
		}
		stages[len(stages)-1].body = append(stages[len(stages)-1].body, in)
	}
	return stages
}

// goBuild finds `go build` in a RUN of s and returns its -o output and its
// package arguments.
func goBuild(s stage) (out string, pkgs []string, cgoOff bool, found bool) {
	for _, in := range s.body {
		switch in.cmd {
		case "ENV":
			if regexp.MustCompile(`(^|\s)CGO_ENABLED=0(\s|$)`).MatchString(in.args) {
				cgoOff = true
			}
		case "RUN":
			_, after, ok := strings.Cut(in.args, "go build")
			if !ok {
				continue
			}
			if regexp.MustCompile(`CGO_ENABLED=0\s[^&;|]*go build`).MatchString(in.args) {
				cgoOff = true
			}
			f := strings.Fields(regexp.MustCompile(`&&|;|\|`).Split(after, 2)[0])
			for i := 0; i < len(f); i++ {
				switch {
				case f[i] == "-o" && i+1 < len(f):
					out = f[i+1]
					i++
				case strings.HasPrefix(f[i], "-o="):
					out = strings.TrimPrefix(f[i], "-o=")
				case strings.HasPrefix(f[i], "-"):
					// A flag with a separate value (-ldflags '-s -w' etc.)
					// never looks like a package path below.
				case strings.HasPrefix(f[i], "./") || f[i] == ".":
					pkgs = append(pkgs, f[i])
				}
			}
			found = true
		}
	}
	return out, pkgs, cgoOff, found
}

func TestDockerfile(t *testing.T) {
	stages := parseDockerfile(t, dockerfilePath)
	if len(stages) < 2 {
		t.Fatalf("%s: %d stages, want a build stage and a final one", dockerfilePath, len(stages))
	}

	// The build stage uses the Go release go.mod names.
	b, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("go.mod: no go directive")
	}
	goVersion := string(m[1])
	build0 := stages[0]
	image, tag, _ := strings.Cut(build0.image, ":")
	if image != "golang" || !(tag == goVersion || strings.HasPrefix(tag, goVersion+".") || strings.HasPrefix(tag, goVersion+"-")) {
		t.Errorf("%s: build stage FROM %s, want golang:%s (go.mod says go %s)", dockerfilePath, build0.image, goVersion, goVersion)
	}

	out, pkgs, cgoOff, found := goBuild(build0)
	if !found {
		t.Fatalf("%s: the build stage runs no go build", dockerfilePath)
	}
	if !slices.Equal(pkgs, []string{"./cmd/fleetscope"}) {
		t.Errorf("%s: go build %q, want ./cmd/fleetscope", dockerfilePath, pkgs)
	}
	if !cgoOff {
		t.Errorf("%s: go build without CGO_ENABLED=0: the binary would need libc, which the final image lacks", dockerfilePath)
	}
	if out == "" {
		t.Fatalf("%s: go build has no -o", dockerfilePath)
	}
	pkg, err := build.ImportDir("../cmd/fleetscope", 0)
	if err != nil || pkg.Name != "main" {
		t.Errorf("../cmd/fleetscope is not a main package (%v)", err)
	}

	// The final stage copies that binary and runs `fleetscope server`.
	final := stages[len(stages)-1]
	var entry, cmd []string
	var exposed []string
	copied := ""
	for _, in := range final.body {
		switch in.cmd {
		case "COPY":
			f := strings.Fields(in.args)
			from := slices.IndexFunc(f, func(s string) bool { return strings.HasPrefix(s, "--from=") })
			if from >= 0 && len(f) == from+3 {
				src := strings.TrimPrefix(f[from], "--from=")
				if (src == build0.name || src == "0") && f[from+1] == out {
					copied = f[from+2]
				}
			}
		case "ENTRYPOINT":
			entry = jsonArgs(t, in)
		case "CMD":
			cmd = jsonArgs(t, in)
		case "EXPOSE":
			for _, p := range strings.Fields(in.args) {
				exposed = append(exposed, strings.TrimSuffix(p, "/tcp"))
			}
		case "ENV":
			for _, kv := range strings.Fields(in.args) {
				if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "FLEETSCOPE_") && !slices.Contains(server.Env, k) {
					t.Errorf("%s:%d: ENV %s, which the server does not read", dockerfilePath, in.line, k)
				}
			}
		}
	}
	if copied == "" {
		t.Fatalf("%s: the final stage does not COPY --from=%s %s", dockerfilePath, build0.name, out)
	}
	if len(entry) != 1 || entry[0] != copied {
		t.Errorf("%s: ENTRYPOINT %q, want [%q]", dockerfilePath, entry, copied)
	}
	if !slices.Equal(cmd, []string{"server"}) {
		t.Errorf("%s: CMD %q, want [\"server\"]", dockerfilePath, cmd)
	}
	if port := composeAddrPort(t, loadCompose(t)); !slices.Contains(exposed, port) {
		t.Errorf("%s: EXPOSE %q, but the compose file's FLEETSCOPE_ADDR listens on %s", dockerfilePath, exposed, port)
	}
}

// jsonArgs returns the exec-form (JSON array) arguments of ENTRYPOINT/CMD.
func jsonArgs(t *testing.T, in instruction) []string {
	t.Helper()
	var out []string
	if err := json.Unmarshal([]byte(in.args), &out); err != nil {
		t.Errorf("%s:%d: %s %s: want the exec form [\"...\"] (signals reach the server): %v", dockerfilePath, in.line, in.cmd, in.args, err)
	}
	return out
}

// ---- Dockerfile.dockerignore -----------------------------------------------

// ignoreMatcher applies .dockerignore patterns (the subset of the syntax:
// *, ?, **, leading !, paths relative to the context root) to slash paths:
// a pattern excluding a directory excludes what is below it; the last
// matching pattern wins.
type ignoreMatcher []struct {
	re     *regexp.Regexp
	negate bool
}

func loadIgnore(t *testing.T, path string) ignoreMatcher {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m ignoreMatcher
	for line := range strings.Lines(string(b)) {
		p := strings.TrimSpace(line)
		if p == "" || strings.HasPrefix(p, "#") {
			continue
		}
		neg := strings.HasPrefix(p, "!")
		p = strings.Trim(filepath.ToSlash(filepath.Clean(strings.TrimPrefix(p, "!"))), "/")
		var re strings.Builder
		re.WriteString("^")
		for i := 0; i < len(p); i++ {
			switch {
			case strings.HasPrefix(p[i:], "**/"):
				re.WriteString("(.*/)?")
				i += 2
			case strings.HasPrefix(p[i:], "**"):
				re.WriteString(".*")
				i++
			case p[i] == '*':
				re.WriteString("[^/]*")
			case p[i] == '?':
				re.WriteString("[^/]")
			default:
				re.WriteString(regexp.QuoteMeta(p[i : i+1]))
			}
		}
		re.WriteString("$")
		m = append(m, struct {
			re     *regexp.Regexp
			negate bool
		}{regexp.MustCompile(re.String()), neg})
	}
	return m
}

func (m ignoreMatcher) excluded(path string) bool {
	out := false
	for _, p := range m {
		for prefix := path; ; {
			if p.re.MatchString(prefix) {
				out = !p.negate
				break
			}
			i := strings.LastIndex(prefix, "/")
			if i < 0 {
				break
			}
			prefix = prefix[:i]
		}
	}
	return out
}

func TestDockerignore(t *testing.T) {
	m := loadIgnore(t, dockerfilePath+".dockerignore")
	// Large or private things stay out of the build context.
	for _, p := range []string{".git/HEAD", "bin/fleetscope", "bin/minio", ".data/pg/data/PG_VERSION", "web/node_modules/x/index.js", "perf.test"} {
		if !m.excluded(p) {
			t.Errorf("%s.dockerignore sends %s to the build context", dockerfilePath, p)
		}
	}
	// Everything the build reads goes in: Go sources, modules files and
	// whatever else lives next to them (embedded SQL, web assets).
	walked := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, ".."+string(filepath.Separator)))
		if d.IsDir() {
			if path != ".." && m.excluded(rel) {
				return filepath.SkipDir
			}
			return nil
		}
		walked++
		if m.excluded(rel) && (strings.HasSuffix(rel, ".go") || rel == "go.mod" || rel == "go.sum" || strings.HasPrefix(rel, "migrations/")) {
			t.Errorf("%s.dockerignore leaves %s out of the build context", dockerfilePath, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if walked == 0 {
		t.Fatal("walked no files")
	}
	// The checks above rely on the matcher; make sure it can say no.
	for _, p := range []string{"go.mod", "cmd/fleetscope/main.go", "bin.go", "binx/a.go"} {
		if m.excluded(p) {
			t.Errorf("%s.dockerignore excludes %s", dockerfilePath, p)
		}
	}
}
