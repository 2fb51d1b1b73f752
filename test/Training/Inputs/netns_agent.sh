#!/bin/sh
# Open MPI launch agent for test "hosts" that are network namespaces
# (plm_rsh_agent, in place of ssh; two_hosts.py): called as
#   netns_agent.sh HOST COMMAND...
# it runs COMMAND (a shell command line, as ssh would) inside the network
# namespace of HOST, from $PIPEDREAM_NETNS_HOSTS ("ADDRESS=NAMESPACE ...").
host=$1
shift
ns=""
for pair in $PIPEDREAM_NETNS_HOSTS; do
  case "$pair" in
    "$host="*) ns=${pair#*=} ;;
  esac
done
if [ -z "$ns" ]; then
  echo "netns_agent.sh: unknown host '$host' (PIPEDREAM_NETNS_HOSTS: $PIPEDREAM_NETNS_HOSTS)" >&2
  exit 1
fi
exec ip netns exec "$ns" /bin/sh -c "$*"
