// Command fleetscope is the one fleetscope binary: the local profile tools
// (collapse, heatmap, flamegraph), the server, its clients (upload,
// profiles, admin, the agent) and the bootstrap commands (migrate, tenant,
// key, check). One file per command or command group; env.go is the one
// place configuration is read. Commands parse flags and print answers: the
// work is done by the ingest, query and store packages. main stays small:
// it builds the command tree and maps errors to exit codes (1 for
// failures, 2 for usage errors, 3 for a fleet query that counted
// nothing), one line on stderr.
package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

func main() {
	if path := os.Getenv("FLEETSCOPE_CPUPROFILE"); path != "" { // profile fleetscope itself
		if f, err := os.Create(path); err == nil {
			pprof.StartCPUProfile(f)
			code := run(os.Args[1:])
			pprof.StopCPUProfile()
			f.Close()
			os.Exit(code)
		}
	}
	os.Exit(run(os.Args[1:]))
}

// usageError marks errors in how the command was called.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }

// emptyAnswer marks an answer that counted nothing (a fleet query that
// matched no profile or no sample): what was printed, if anything, is
// valid but empty; the error says why, and the exit status is 3.
type emptyAnswer struct{ err error }

func (e emptyAnswer) Error() string { return e.err.Error() }

// Exit statuses.
const (
	exitFailure = 1
	exitUsage   = 2
	exitEmpty   = 3
)

func run(args []string) int {
	root := newRoot()
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintf(os.Stderr, "fleetscope: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	var ea emptyAnswer
	if errors.As(err, &ea) {
		return exitEmpty
	}
	return exitFailure
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "fleetscope",
		Short: "Sub-second profiling for fleets: heatmaps and exact range flame graphs",
		Long: `Sub-second profiling for fleets: heatmaps and exact range flame graphs, of a
local profile file or of the profiles a fleetscope server stores.

Errors go to stderr as one line. Exit status: 0 success, 1 failure, 2 usage
error, 3 a fleet query that counted nothing (no profile or no sample matched).`,
		Example: `  fleetscope heatmap perf.txt                      # a local perf script file
  fleetscope flamegraph --start 2.4 --end 3.48 perf.txt > range.folded
  export FLEETSCOPE_URL=https://fleetscope.example.com
  export FLEETSCOPE_API_KEY=fsk_...
  fleetscope upload --app checkout --host web-7 perf.txt.gz
  fleetscope heatmap --app checkout --from 1h        # the fleet's last hour
  fleetscope flamegraph --app checkout --host web-7 --from 30m --to 25m`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(collapseCmd(), heatmapCmd(), flamegraphCmd(), diffCmd(),
		serverCmd(), migrateCmd(), tenantCmd(), keyCmd(), checkCmd(), uploadCmd(), profilesCmd(), adminCmd(), agentCmd(), spansCmd())
	setEnvironment(root, clientEnvHelp("")+`
  FLEETSCOPE_DATABASE_URL, FLEETSCOPE_BLOB_URL, ...   the server's configuration
                       (server, migrate, tenant, key, check)
  FLEETSCOPE_CPUPROFILE=FILE   write a CPU profile of the command to FILE`)
	setupHelp(root)
	return root
}

// batch tunes the garbage collector for a one-shot local command, which
// allocates little that lives long: collect less often, but stay well
// inside a small memory budget. (The server keeps Go's defaults.)
func batch() {
	debug.SetGCPercent(400)
	debug.SetMemoryLimit(160 << 20)
}

// args checks positional arguments, reporting a usage error.
func args(min, max int) cobra.PositionalArgs {
	return func(c *cobra.Command, a []string) error {
		if len(a) < min || len(a) > max {
			return usageError{fmt.Errorf("%s: want %s", c.Name(), c.Use)}
		}
		return nil
	}
}
