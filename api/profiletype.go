package api

import (
	"strings"

	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"

	"github.com/fleetscope/fleetscope"
)

// Pyroscope names what a profile measures with a profile type id,
// NAME:SAMPLE_TYPE:SAMPLE_UNIT:PERIOD_TYPE:PERIOD_UNIT
// ("process_cpu:cpu:nanoseconds:cpu:nanoseconds"); fleetscope with an
// event ("cpu-clock", "cpu", "alloc_space"). The mapping is a function of
// the event's base name (perf's modifiers dropped, as fleet selections
// group events), one to one:
//
//   - the sample types Go's pprof profiles (and Pyroscope's SDKs and
//     Grafana Alloy) send have the ids Pyroscope gives them (knownTypes);
//   - every other event E, perf's events above all (cpu-clock, cycles,
//     sched:sched_switch), is "fleetscope:E:count:E:count", with ':' and
//     '%' in E written %3A and %25 so that the id keeps its five parts;
//     fleetscope counts their samples, so the unit is count.
//
// A fleetscope event name is accepted wherever an id is (anything that is
// not five colon-separated parts is read as one).

// profileType is a Pyroscope profile type.
type profileType struct {
	name, sampleType, sampleUnit, periodType, periodUnit string
}

// ID is the type's id, its five parts joined by colons.
func (t profileType) ID() string {
	return strings.Join([]string{t.name, t.sampleType, t.sampleUnit, t.periodType, t.periodUnit}, ":")
}

func (t profileType) proto() *typesv1.ProfileType {
	return &typesv1.ProfileType{ID: t.ID(), Name: t.name, SampleType: t.sampleType, SampleUnit: t.sampleUnit,
		PeriodType: t.periodType, PeriodUnit: t.periodUnit}
}

// label returns the value of one of the labels a type defines (the names
// in typeLabels), as Pyroscope sets them on every series.
func (t profileType) label(name string) string {
	switch name {
	case "__profile_type__":
		return t.ID()
	case "__name__":
		return t.name
	case "__type__":
		return t.sampleType
	case "__unit__":
		return t.sampleUnit
	case "__period_type__":
		return t.periodType
	case "__period_unit__":
		return t.periodUnit
	}
	return ""
}

// typeLabels are the labels a profile type defines, sorted.
var typeLabels = []string{"__name__", "__period_type__", "__period_unit__", "__profile_type__", "__type__", "__unit__"}

// knownTypes are the events with Pyroscope's own ids: the sample types of
// Go's profiles. "cpu" is also the event of nflxprofile, V8 and Chrome
// profiles (sample counts there): fleet queries merge events by name, and
// it keeps Pyroscope's id. Go's block profile has the mutex profile's
// sample types; fleetscope keeps no profile name, so both are "mutex".
var knownTypes = map[string]profileType{
	"cpu":           {"process_cpu", "cpu", "nanoseconds", "cpu", "nanoseconds"},
	"samples":       {"process_cpu", "samples", "count", "cpu", "nanoseconds"},
	"alloc_objects": {"memory", "alloc_objects", "count", "space", "bytes"},
	"alloc_space":   {"memory", "alloc_space", "bytes", "space", "bytes"},
	"inuse_objects": {"memory", "inuse_objects", "count", "space", "bytes"},
	"inuse_space":   {"memory", "inuse_space", "bytes", "space", "bytes"},
	"goroutine":     {"goroutines", "goroutine", "count", "goroutine", "count"},
	"contentions":   {"mutex", "contentions", "count", "contentions", "count"},
	"delay":         {"mutex", "delay", "nanoseconds", "contentions", "count"},
}

// knownEvents maps the known types' ids back to their events.
var knownEvents = func() map[string]string {
	out := map[string]string{}
	for e, t := range knownTypes {
		out[t.ID()] = e
	}
	return out
}()

// genericType is the name of the types of events Pyroscope has no id for.
const genericType = "fleetscope"

var (
	escapeEvent   = strings.NewReplacer("%", "%25", ":", "%3A")
	unescapeEvent = strings.NewReplacer("%25", "%", "%3A", ":")
)

// typeOf returns the profile type of an event (base name).
func typeOf(event string) profileType {
	if t, ok := knownTypes[event]; ok {
		return t
	}
	e := escapeEvent.Replace(event)
	return profileType{genericType, e, "count", e, "count"}
}

// eventOf returns the event (base name) a profile type id stands for: the
// inverse of typeOf, or a fleetscope event name given as the id. Returns
// EINVALID for an empty id or a five-part id typeOf never makes.
func eventOf(id string) (string, profileType, error) {
	if id == "" {
		return "", profileType{}, fleetscope.Errorf(fleetscope.EINVALID, "a profile type is needed (profile_typeID): ProfileTypes lists them")
	}
	parts := strings.Split(id, ":")
	if len(parts) != 5 {
		e := fleetscope.EventBase(id)
		return e, typeOf(e), nil
	}
	if e, ok := knownEvents[id]; ok {
		return e, knownTypes[e], nil
	}
	if parts[0] == genericType {
		e := unescapeEvent.Replace(parts[1])
		if t := typeOf(e); e != "" && t.ID() == id {
			return e, t, nil
		}
	}
	return "", profileType{}, fleetscope.Errorf(fleetscope.EINVALID, "profile type %s: not one fleetscope serves (ProfileTypes lists them; an event name such as cpu-clock works too)", quoteShort(id))
}
