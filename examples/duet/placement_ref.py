"""Reference model of Duet's VIP placement (thesis §2.3), as specified in
specs/intent.md §5 ("The placement built-in").  It reads the placement_*
relations that the standard rules derive (from `netc run -D DIR` output or a
dict) and returns {endpoint: switch}.  It exists to pin the contract down and
to cross-check the Rust built-in; it is not used by netc itself.

Model:
 - resources: per switch the three tables (host, ECMP, tunnel) with the free
   capacity of placement_switch; per directed link capacity_mbps * headroom;
 - an endpoint's traffic enters at its source switches (placement_traffic);
   it flows source -> placed switch -> the ToRs of its members
   (placement_member_tor, proportional to slots), each leg split equally over
   all shortest paths (hop count) of the placement_link graph;
 - VIPs by decreasing total traffic (ties: lower address first); each VIP is
   followed by its TIPs (traffic = VIP traffic / k, entering at the VIP's
   switch, members = the TIP's DIP ToRs);
 - a VIP goes to the switch with the lowest MRU (max utilisation over every
   resource after adding it), ties broken by switch name; if the lowest MRU
   exceeds 1 the algorithm stops: this and every later endpoint stays on the
   SMuxes;
 - sticky: with a previous placement s_c that is still feasible, move to the
   best s_n only if MRU(s_c) - MRU(s_n) > delta.
"""

from collections import defaultdict, deque
import ipaddress


def _paths_load(adj, src, dst, amount, load):
    """Add `amount` from src to dst split equally over all shortest paths."""
    if src == dst or amount == 0:
        return True
    dist = {dst: 0}
    q = deque([dst])
    while q:
        u = q.popleft()
        for v in adj[u]:
            if v not in dist:
                dist[v] = dist[u] + 1
                q.append(v)
    if src not in dist:
        return False
    share = {src: float(amount)}
    frontier = [src]
    while frontier:
        nxt = {}
        for u in sorted(frontier, key=lambda x: -dist[x]):
            if u == dst:
                continue
            hops = sorted(v for v in adj[u] if dist.get(v, 1 << 30) == dist[u] - 1)
            for v in hops:
                part = share[u] / len(hops)
                load[(u, v)] += part
                share[v] = share.get(v, 0.0) + part
                nxt[v] = True
            share[u] = 0.0
        frontier = [v for v in nxt if v != dst]
    return True


def place(need, switch_free, links, member_tor, tips, traffic, previous=None, headroom=0.8, delta=0.05):
    """need: ep -> (host, ecmp, tunnel); switch_free: sw -> (host, ecmp, tunnel);
    links: [(a, b, mbps)] directed; member_tor: ep -> {tor: slots};
    tips: tip -> vip; traffic: vip -> {source_switch: mbps}; previous: ep -> sw."""
    previous = previous or {}
    adj = defaultdict(list)
    cap = {}
    for a, b, c in links:
        adj[a].append(b)
        cap[(a, b)] = c * headroom
    used_tab = {s: [0, 0, 0] for s in switch_free}
    link_load = defaultdict(float)
    placement = {}
    tips_of = defaultdict(list)
    for t, v in tips.items():
        tips_of[v].append(t)
    vips = [e for e in need if e not in tips]
    total = {v: sum(traffic.get(v, {}).values()) for v in vips}
    order = []
    for v in sorted(vips, key=lambda v: (-total[v], ipaddress.ip_address(v))):
        order.append((v, traffic.get(v, {})))
        for t in sorted(tips_of[v], key=ipaddress.ip_address):
            order.append((t, None))

    def evaluate(ep, src_traffic, sw):
        tab = [used_tab[sw][i] + need[ep][i] for i in range(3)]
        mru = 0.0
        for i in range(3):
            free = switch_free[sw][i]
            if need[ep][i] > 0:
                if free <= 0:
                    return None
                mru = max(mru, tab[i] / free)
        load = defaultdict(float)
        for src, mbps in src_traffic.items():
            if not _paths_load(adj, src, sw, mbps, load):
                return None
            tors = member_tor.get(ep, {})
            slots = sum(tors.values())
            for tor, n in sorted(tors.items()):
                if not _paths_load(adj, sw, tor, mbps * n / slots, load):
                    return None
        for lk, x in load.items():
            mru = max(mru, (link_load[lk] + x) / cap[lk])
        for lk, x in link_load.items():
            if cap.get(lk):
                mru = max(mru, x / cap[lk])
        return mru, load

    for ep, src_traffic in order:
        if src_traffic is None:  # a TIP: enters at its VIP's switch
            vip = tips[ep]
            if vip not in placement:
                continue
            k = len(tips_of[vip])
            src_traffic = {placement[vip]: mbps / k for mbps in [total[vip]]}
        best = None
        for sw in sorted(switch_free):
            r = evaluate(ep, src_traffic, sw)
            if r is None:
                continue
            if best is None or r[0] < best[1][0]:
                best = (sw, r)
        if best is None or best[1][0] > 1.0:
            break  # Duet: the algorithm terminates; the rest stays on the SMuxes
        sw, (mru, load) = best
        prev = previous.get(ep)
        if prev and prev != sw:
            rp = evaluate(ep, src_traffic, prev)
            if rp is not None and rp[0] <= 1.0 and rp[0] - mru <= delta:
                sw, (mru, load) = prev, rp
        placement[ep] = sw
        for i in range(3):
            used_tab[sw][i] += need[ep][i]
        for lk, x in load.items():
            link_load[lk] += x
    return placement


def place_from_outputs(rels, traffic, previous=None, headroom=0.8, delta=0.05):
    """rels: relation name -> list of rows (strings) as printed by netc."""
    need = {r[0]: tuple(int(x) for x in r[1:4]) for r in rels["placement_need"]}
    free = {r[0]: tuple(int(x) for x in r[1:4]) for r in rels["placement_switch"]}
    links = [(r[0], r[1], int(r[2])) for r in rels["placement_link"]]
    mt = defaultdict(dict)
    for ep, tor, n in rels["placement_member_tor"]:
        mt[ep][tor] = int(n)
    tips = {r[0]: r[1] for r in rels["placement_tip"]}
    return place(need, free, links, mt, tips, traffic, previous, headroom, delta)
