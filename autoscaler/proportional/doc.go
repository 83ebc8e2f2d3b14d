// Package proportional computes replica counts from the size of a cluster the
// way cluster-proportional-autoscaler (CPA, kubernetes-sigs) v1.10.x does:
// its "linear" and "ladder" modes, its parameter JSON, its validation and its
// node and core counting, with identical results on identical inputs.
//
// The package is pure: no I/O, no clocks, no logging. The Autoscaler
// controller feeds it nodes (Count) and parameters (ParseConfigMap, ParseJSON,
// or params built from its own API types and checked with Validate) and gets
// back a replica count with the reasoning behind it (Explain).
//
// Where CPA's behaviour is surprising but harmless it is reproduced (the
// float64 division, the order of the min and max clamps, the single point of
// failure rule exceeding max, a count below the first ladder step taking the
// first step). Where CPA's answer is a hazard (a ladder that gives 0
// replicas for every cluster, a ladder row CPA silently zero-fills or
// truncates, counts that overflow CPA's int32 conversion), Hazards reports it
// so that callers can warn or reject; Explain never wraps around as CPA's
// int32 conversion does but saturates at math.MaxInt32 and says so.
package proportional
