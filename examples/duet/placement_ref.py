"""Reference model of Duet's VIP placement (thesis §2.3), as specified in
specs/intent.md §5 ("The placement built-in").  It reads the placement_*
relations that the standard rules derive (from `netc run -D DIR` output or a
dict) and returns {endpoint: switch}.  It pins the contract down and is the
independent side of tests/test_placement.py, which compares it with the Rust
built-in (runtime/intent/src/placement/) on random inputs; netc itself does not use
it.  It is written for clarity, not speed: every candidate recomputes every
resource.

Model:
 - resources: per switch the three tables (host, ECMP, tunnel) with the free
   capacity of placement_switch; per directed link the sum of its
   placement_link capacities times the headroom.  Utilisation = used /
   capacity (a resource of capacity <= 0 is 0 while unused, infinite once
   used);
 - an endpoint's traffic enters at its source switches (placement_traffic);
   it flows source -> placed switch -> the ToRs of its members
   (placement_member_tor, proportional to slots), each leg split hop by hop
   equally over the next hops on shortest paths (hop count, ECMP) of the
   placement_link graph; a leg whose end is unreachable makes the switch
   infeasible;
 - VIPs by decreasing total traffic (ties: lower address first); each placed
   VIP is followed by its TIPs (traffic = VIP traffic / k, entering at the
   VIP's switch);
 - MRU(s) = the maximum utilisation over EVERY resource after adding the
   endpoint at s (thesis eq. 2.2); LRU(s) = the maximum over the resources
   the endpoint itself uses at s.  The endpoint goes to the switch with the
   lowest (MRU, LRU), ties by switch name (the thesis breaks ties at
   random);
 - if the lowest MRU exceeds 1 the algorithm terminates: this endpoint and
   every later one stay on the SMuxes (thesis §2.3.1, "the algorithm
   terminates. The remaining VIPs are not assigned to any switch");
 - route budget: every placed endpoint's /32 takes an underlay entry on
   every switch, so at most min(placement_route_free) endpoints are placed;
   the endpoint that would exceed it stops the greedy like one that fits
   nowhere;
 - sticky (§2.3.2): with a previous switch s_c that is still feasible, move to
   the best s_n only if MRU(s_c) - MRU(s_n) > delta;
 - every comparison of utilisations has a tolerance EPS = 1e-9 (a value is
   lower only if lower by more than EPS), so that float rounding never
   decides a placement.
"""

from collections import defaultdict, deque
import ipaddress
import math

EPS = 1e-9
TABLES = ("host", "ecmp", "tunnel")


def _next_hops(adj, dst):
    """dist[u] = hops from u to dst (BFS on the reversed graph)."""
    radj = defaultdict(set)
    for u, vs in adj.items():
        for v in vs:
            radj[v].add(u)
    dist = {dst: 0}
    q = deque([dst])
    while q:
        v = q.popleft()
        for u in sorted(radj[v]):
            if u not in dist:
                dist[u] = dist[v] + 1
                q.append(u)
    return dist


def _leg(adj, src, dst, amount, load):
    """Add `amount` going src -> dst, split equally at every hop over the next
    hops on shortest paths.  False if dst is unreachable from src."""
    if src == dst or amount == 0:
        return True
    dist = _next_hops(adj, dst)
    if src not in dist:
        return False
    share = {src: float(amount)}
    for d in range(dist[src], 0, -1):
        for u in sorted(n for n in share if dist[n] == d):
            hops = sorted(v for v in adj[u] if dist.get(v) == d - 1)
            for v in hops:
                load[(u, v)] += share[u] / len(hops)
                share[v] = share.get(v, 0.0) + share[u] / len(hops)
    return True


def _util(used, cap):
    if cap > 0:
        return used / cap
    return 0.0 if used == 0 else math.inf


def _lower(a, b):
    return a < b - EPS


def place(need, switch_free, links, member_tor, tips, traffic, previous=None, headroom=0.8, delta=0.05, trace=None,
          routes_free=None):
    """need: ep -> (host, ecmp, tunnel); switch_free: sw -> (host, ecmp, tunnel);
    links: [(a, b, mbps)] directed; member_tor: ep -> {tor: slots};
    tips: tip -> vip; traffic: vip -> {source_switch: mbps}; previous: ep -> sw;
    routes_free: how many endpoints may be placed in all (None: no bound).
    trace: a list to which (endpoint, {switch: (MRU, LRU) or None}) is
    appended for every endpoint evaluated (to explain a placement)."""
    previous = previous or {}
    adj = defaultdict(set)
    cap = defaultdict(float)
    for a, b, c in links:
        adj[a].add(b)
        cap[(a, b)] += c
    cap = {lk: c * headroom for lk, c in cap.items()}
    used_tab = {s: [0, 0, 0] for s in switch_free}
    link_load = {lk: 0.0 for lk in cap}
    placement = {}
    tips_of = defaultdict(list)
    for t, v in tips.items():
        if t in need:
            tips_of[v].append(t)
    vips = [e for e in need if e not in tips]
    total = {v: sum(traffic.get(v, {}).values()) for v in vips}

    def evaluate(ep, src_traffic, sw):
        """(MRU, LRU, link load) of placing ep at sw, or None if infeasible."""
        load = defaultdict(float)
        tors = member_tor.get(ep, {})
        slots = sum(tors.values())
        for src, mbps in sorted(src_traffic.items()):
            if not _leg(adj, src, sw, mbps, load):
                return None
            for tor, n in sorted(tors.items()):
                if not _leg(adj, sw, tor, mbps * n / slots, load):
                    return None
        mru = lru = 0.0
        for s in switch_free:
            for i in range(3):
                add = need[ep][i] if s == sw else 0
                u = _util(used_tab[s][i] + add, switch_free[s][i])
                mru = max(mru, u)
                if add > 0:
                    lru = max(lru, u)
        for lk in cap:
            u = _util(link_load[lk] + load.get(lk, 0.0), cap[lk])
            mru = max(mru, u)
            if load.get(lk, 0.0) > 0:
                lru = max(lru, u)
        if math.isinf(mru):
            return None
        return mru, lru, load

    order = []
    for v in sorted(vips, key=lambda v: (-total[v], ipaddress.ip_address(v))):
        order.append(v)
        order.extend(sorted(tips_of[v], key=ipaddress.ip_address))
    for ep in order:
        if ep in tips:  # a TIP: enters at its VIP's switch
            vip = tips[ep]
            if vip not in placement:
                continue
            src_traffic = {placement[vip]: total[vip] / len(tips_of[vip])}
        else:
            src_traffic = traffic.get(ep, {})
        if routes_free is not None and len(placement) >= routes_free:
            break  # the route budget is used up: the rest stays on the SMuxes
        best = None
        seen = {}
        for sw in sorted(switch_free):
            r = evaluate(ep, src_traffic, sw)
            seen[sw] = r and r[:2]
            if r is None:
                continue
            if best is None or _lower(r[0], best[1][0]) or (
                not _lower(best[1][0], r[0]) and _lower(r[1], best[1][1])
            ):
                best = (sw, r)
        if trace is not None:
            trace.append((ep, seen))
        if best is None or best[1][0] > 1.0 + EPS:
            break  # Duet: the algorithm terminates; the rest stays on the SMuxes
        sw, (mru, _, load) = best
        prev = previous.get(ep)
        if prev and prev != sw and prev in switch_free:
            rp = evaluate(ep, src_traffic, prev)
            if rp is not None and rp[0] <= 1.0 + EPS and not (rp[0] - mru > delta + EPS):
                sw, (mru, _, load) = prev, rp
        placement[ep] = sw
        for i in range(3):
            used_tab[sw][i] += need[ep][i]
        for lk, x in load.items():
            link_load[lk] += x
    return placement


def place_from_outputs(rels, traffic, previous=None, headroom=0.8, delta=0.05, trace=None):
    """rels: relation name -> list of rows (strings) as printed by netc."""
    need = {r[0]: tuple(int(x) for x in r[1:4]) for r in rels["placement_need"]}
    free = {r[0]: tuple(int(x) for x in r[1:4]) for r in rels["placement_switch"]}
    links = [(r[0], r[1], int(r[2])) for r in rels["placement_link"]]
    mt = defaultdict(dict)
    for ep, tor, n in rels["placement_member_tor"]:
        mt[ep][tor] = int(n)
    tips = {r[0]: r[1] for r in rels["placement_tip"]}
    route_rows = rels.get("placement_route_free", [])
    routes_free = min((int(r[1]) for r in route_rows), default=None)
    return place(need, free, links, mt, tips, traffic, previous, headroom, delta, trace, routes_free)
