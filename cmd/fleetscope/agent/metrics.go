package agent

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the agent's Prometheus metrics (served with --metrics-addr).
type Metrics struct {
	Recordings      prometheus.Counter
	RecordFailures  prometheus.Counter
	Uploads         *prometheus.CounterVec // by result: created, duplicate
	UploadFailures  *prometheus.CounterVec // by kind: retry, rejected
	UploadedBytes   prometheus.Counter
	Dropped         prometheus.Counter
	SpoolBytes      prometheus.Gauge
	SpoolFiles      prometheus.Gauge
	WatchedFiles    prometheus.Counter
	WatchedRejected prometheus.Counter
}

// NewMetrics creates the metrics and registers them with reg (if not nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Recordings:      prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetscope_agent_recordings_total", Help: "Recordings spooled."}),
		RecordFailures:  prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetscope_agent_record_failures_total", Help: "perf record or perf script runs that failed."}),
		Uploads:         prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetscope_agent_uploads_total", Help: "Spool entries the server stored, by result (created, or duplicate: the server had the same bytes)."}, []string{"result"}),
		UploadFailures:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetscope_agent_upload_failures_total", Help: "Upload attempts that failed, by kind (retry: kept for a retry; rejected: the server refused the file for good)."}, []string{"kind"}),
		UploadedBytes:   prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetscope_agent_uploaded_bytes_total", Help: "Bytes uploaded (as sent, compressed)."}),
		Dropped:         prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetscope_agent_spool_dropped_total", Help: "Recordings dropped because the spool was full (oldest first)."}),
		SpoolBytes:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "fleetscope_agent_spool_bytes", Help: "Bytes waiting in the spool."}),
		SpoolFiles:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "fleetscope_agent_spool_files", Help: "Recordings waiting in the spool."}),
		WatchedFiles:    prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetscope_agent_watched_files_total", Help: "Files picked up from the watched directory."}),
		WatchedRejected: prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetscope_agent_watched_rejected_total", Help: "Files in the watched directory that could not be read (moved to its failed/)."}),
	}
	if reg != nil {
		reg.MustRegister(m.Recordings, m.RecordFailures, m.Uploads, m.UploadFailures, m.UploadedBytes,
			m.Dropped, m.SpoolBytes, m.SpoolFiles, m.WatchedFiles, m.WatchedRejected)
	}
	return m
}
