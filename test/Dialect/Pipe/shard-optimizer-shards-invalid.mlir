// RUN: pipedream-opt %s -pipe-shard-optimizer="shards=0" -verify-diagnostics

// expected-error @+1 {{pipe-shard-optimizer: shards must be at least 1, got 0}}
module {
}
