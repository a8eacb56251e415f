// Command pyroscope-app is an ordinary Go service instrumented with
// github.com/grafana/pyroscope-go, unchanged but for its server address and
// key: the agent tests run it against a fleetscope server to show that
// pyroscope-go's pushes land there.
//
//	PYRO_SERVER=http://127.0.0.1:8080 PYRO_KEY=fsk_... PYRO_AUTH=bearer|basic \
//	    pyroscope-app -app checkout -tag env=test -for 3s -every 1s
//
// It burns CPU in burnSHA and burnSort for -for, uploading every -every,
// then stops the profiler (which sends the last profile) and exits. Upload
// errors are printed on stderr, one per line, prefixed "upload error:".
package main

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/grafana/pyroscope-go"
)

type logger struct{}

func (logger) Infof(string, ...any)  {}
func (logger) Debugf(string, ...any) {}
func (logger) Errorf(f string, args ...any) {
	fmt.Fprintf(os.Stderr, "upload error: "+f+"\n", args...)
}

type tags map[string]string

func (t tags) String() string { return fmt.Sprint(map[string]string(t)) }
func (t tags) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("want key=value")
	}
	t[k] = v
	return nil
}

func main() {
	app := flag.String("app", "pyroscope-app", "application name")
	run := flag.Duration("for", 3*time.Second, "how long to burn CPU")
	every := flag.Duration("every", time.Second, "upload rate")
	t := tags{}
	flag.Var(t, "tag", "tag key=value (repeatable)")
	flag.Parse()

	cfg := pyroscope.Config{
		ApplicationName: *app,
		ServerAddress:   os.Getenv("PYRO_SERVER"),
		Tags:            t,
		UploadRate:      *every,
		Logger:          logger{},
		ProfileTypes:    []pyroscope.ProfileType{pyroscope.ProfileCPU, pyroscope.ProfileAllocSpace, pyroscope.ProfileInuseSpace},
	}
	switch os.Getenv("PYRO_AUTH") {
	case "basic":
		cfg.BasicAuthUser, cfg.BasicAuthPassword = "fleetscope", os.Getenv("PYRO_KEY")
	default:
		cfg.HTTPHeaders = map[string]string{"Authorization": "Bearer " + os.Getenv("PYRO_KEY")}
	}
	p, err := pyroscope.Start(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pyroscope:", err)
		os.Exit(1)
	}
	deadline := time.Now().Add(*run)
	var sink byte
	for time.Now().Before(deadline) {
		sink ^= burnSHA()
		sink ^= burnSort()
	}
	if err := p.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "pyroscope stop:", err)
	}
	fmt.Println("done", sink)
}

func burnSHA() byte {
	b := make([]byte, 64<<10)
	for i := range b {
		b[i] = byte(i)
	}
	var h [32]byte
	for range 20 {
		h = sha256.Sum256(b)
		b[0] = h[0]
	}
	return h[0]
}

func burnSort() byte {
	x := make([]int, 50000)
	for i := range x {
		x[i] = rand.IntN(1 << 30)
	}
	slices.Sort(x)
	return byte(x[0])
}
