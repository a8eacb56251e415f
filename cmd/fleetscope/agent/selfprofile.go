package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/grafana/pyroscope-go"
)

// SelfProfile sends the running process's CPU profiles, every rate, to the
// fleetscope server listening on addr (host:port; an unspecified host means
// this machine) through its Pyroscope-compatible ingest endpoint, with an
// API key that has the ingest scope, under app. The profiles carry the
// labels host (this machine's name) and pid. It returns a function that
// stops profiling (sending the last, partial, profile if the server still
// listens).
func SelfProfile(addr, key, app string, rate time.Duration, log *slog.Logger) (stop func(), err error) {
	if key == "" {
		return nil, errors.New("--self-profile needs an API key with the ingest scope in FLEETSCOPE_SELF_PROFILE_KEY")
	}
	if app == "" {
		app = "fleetscope"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("self-profile: address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	hostname, _ := os.Hostname()
	if rate <= 0 {
		rate = 15 * time.Second
	}
	p, err := pyroscope.Start(pyroscope.Config{
		ApplicationName: app,
		ServerAddress:   "http://" + net.JoinHostPort(host, port),
		HTTPHeaders:     map[string]string{"Authorization": "Bearer " + key},
		Tags:            map[string]string{"host": hostname, "pid": fmt.Sprint(os.Getpid())},
		ProfileTypes:    []pyroscope.ProfileType{pyroscope.ProfileCPU},
		UploadRate:      rate,
		Logger:          pyroLogger{log},
	})
	if err != nil {
		return nil, fmt.Errorf("self-profile: %w", err)
	}
	log.Info("self-profiling: CPU profiles go to this server", "app", app, "every", rate.String())
	return func() { p.Stop() }, nil
}

// pyroLogger sends pyroscope-go's messages to the server's log.
type pyroLogger struct{ log *slog.Logger }

func (l pyroLogger) Infof(f string, args ...any) {
	l.log.Debug("self-profile: " + fmt.Sprintf(f, args...))
}
func (l pyroLogger) Debugf(f string, args ...any) {
	l.log.Debug("self-profile: " + fmt.Sprintf(f, args...))
}
func (l pyroLogger) Errorf(f string, args ...any) {
	l.log.Warn("self-profile: " + fmt.Sprintf(f, args...))
}
