package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetscope/fleetscope/query"
)

// cacheCollector exports the query caches' accounting, per table (all
// tables share one budget, FLEETSCOPE_CACHE_BYTES).
type cacheCollector struct{ q *query.Service }

var (
	cacheBytes = prometheus.NewDesc("fleetscope_cache_bytes",
		"Bytes the query caches hold, by table; the tables share one budget (FLEETSCOPE_CACHE_BYTES).", []string{"table"}, nil)
	cacheEntries = prometheus.NewDesc("fleetscope_cache_entries",
		"Entries the query caches hold, by table.", []string{"table"}, nil)
	cacheHits = prometheus.NewDesc("fleetscope_cache_hits_total",
		"Query cache lookups that found a fresh entry, by table.", []string{"table"}, nil)
	cacheMisses = prometheus.NewDesc("fleetscope_cache_misses_total",
		"Query cache lookups that found none, by table.", []string{"table"}, nil)
	cacheLoads = prometheus.NewDesc("fleetscope_cache_loads_total",
		"Loads of missing query cache entries, by table (one for the requests that met it in flight).", []string{"table"}, nil)
)

func (c cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{cacheBytes, cacheEntries, cacheHits, cacheMisses, cacheLoads} {
		ch <- d
	}
}

func (c cacheCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.q.CacheStats() {
		ch <- prometheus.MustNewConstMetric(cacheBytes, prometheus.GaugeValue, float64(s.Bytes), s.Name)
		ch <- prometheus.MustNewConstMetric(cacheEntries, prometheus.GaugeValue, float64(s.Entries), s.Name)
		ch <- prometheus.MustNewConstMetric(cacheHits, prometheus.CounterValue, float64(s.Hits), s.Name)
		ch <- prometheus.MustNewConstMetric(cacheMisses, prometheus.CounterValue, float64(s.Misses), s.Name)
		ch <- prometheus.MustNewConstMetric(cacheLoads, prometheus.CounterValue, float64(s.Loads), s.Name)
	}
}
