// RUN: pipedream-opt %s -split-input-file -verify-diagnostics

// The verifier of #pipe.partition and #pipe.plan (PipeAttrs.td), and of
// the discardable `pipe.partition` attribute.

// expected-error @+1 {{partition method must be auto, uniform or manual, got 'fast'}}
func.func private @f() attributes {pipe.partition = #pipe.partition<method = "fast", stages = 2, schedule = "1f1b", microbatches = 2, slowest = 1.0 : f64, ideal = 1.0 : f64>}

// -----

// expected-error @+1 {{partition needs at least 1 stage, chunk and micro-batch, got stages = 0, chunks = 1, microbatches = 2}}
func.func private @f() attributes {pipe.partition = #pipe.partition<method = "auto", stages = 0, schedule = "1f1b", microbatches = 2, slowest = 1.0 : f64, ideal = 1.0 : f64>}

// -----

// expected-error @+1 {{partition replicas and replicated_slowest go together (the planner's plan)}}
func.func private @f() attributes {pipe.partition = #pipe.partition<method = "auto", stages = 1, schedule = "1f1b", microbatches = 2, slowest = 1.0 : f64, ideal = 1.0 : f64, replicas = 2>}

// -----

// expected-error @+1 {{plan needs at least 1 stage and one replica count per stage, got 2 stages and 1 replica counts}}
func.func private @f() attributes {p = #pipe.plan<stages = 2, replicas = [2], slowest = 1.0 : f64, uniform = true, chosen = true>}

// -----

// expected-error @+1 {{a uniform plan has the same replicas on every stage}}
func.func private @f() attributes {p = #pipe.plan<stages = 2, replicas = [1, 2], slowest = 1.0 : f64, uniform = true, chosen = false>}

// -----

// expected-error @+1 {{'func.func' op attribute 'pipe.partition' must be a #pipe.partition attribute, got {stages = 2 : i64}}}
func.func private @f() attributes {pipe.partition = {stages = 2 : i64}}
