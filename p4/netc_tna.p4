/* netc_tna.p4 — netc's switch program for Tofino (P4_16, TNA).
 *
 * The same design as p4/netc.p4 (v1model), table for table: every table,
 * action and action profile that netc.p4 has is here with the same @id, the
 * same key fields, match kinds and widths, and the same action parameters,
 * so the P4Runtime messages netc renders for a switch (`DIR/p4/<sw>.txtpb`)
 * install unchanged on a Tofino running this program. p4/netc_tna.p4info.txtpb
 * is netc.p4info.txtpb plus the tables below that only Tofino needs
 * (tests/test_p4_tna.py parses this file and checks both).
 *
 * What differs, and why:
 * - The hash. TNA's Hash extern with an explicit CRC polynomial equal to
 *   CRC-32/ISO-HDLC (poly 0x04C11DB7 reflected, init and xor-out
 *   0xFFFFFFFF), over the same fields in the same order as netc.p4:
 *   specs/functors.md §6 `hash5`.
 * - The member index. Tofino has no run-time `%`, and AFF-1 needs idx to
 *   equal `hash5 % n` exactly, on every switch and every software Mux. With
 *   h5 = b3·2^24 + b2·2^16 + b1·2^8 + b0,
 *       h5 mod n = ( Σ_i (b_i · (2^(8i) mod n)) mod n ) mod n,
 *   and each term r_i = (b_i · (2^(8i) mod n)) mod n < n depends only on
 *   (n, b_i): four exact tables `mod_b0..mod_b3` keyed (n, b_i) add r_i to
 *   an accumulator (acc < 4n), and `mod_reduce`, keyed (n exact, acc range),
 *   subtracts the right multiple of n (4 ranges per n). The control plane
 *   fills them for every n the switch's `lb`/`lb_local`/`route_ecmp`
 *   entries use (netc renders them: `DIR/p4_tna/<sw>.txtpb`, 1,028 entries
 *   per distinct n). A missing entry leaves idx out of 0..n-1, which hits no
 *   ecmp entry: the packet is dropped, never sent to a wrong member.
 * - Control flow. A Tofino table is applied at most once per pass, so the
 *   three places netc.p4 computes `h5 % n` (lb, lb_local, route_ecmp) first
 *   record n and which table hit (`lb_kind`), then one modulo chain runs,
 *   then the matching index table. Packets take the same branches as in
 *   netc.p4.
 * - Encapsulation is split: the `encap` action records the underlay address
 *   and MAC; the header rewrite runs in the apply block, because bf-p4c
 *   does not take conditionals inside actions.
 * - Intrinsic metadata: drop is `drop_ctl`, the egress port
 *   `ucast_egress_port`, the multicast group `mcast_grp_a`; the ingress
 *   port reaches egress in a bridged header, so a replica going back out of
 *   its ingress port is dropped as in netc.p4.
 *
 * Not compiled here: bf-p4c and the Tofino SDE are not on the registries
 * this project builds from (see p4/README.md).
 */
#include <core.p4>
#include <tna.p4>

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_VLAN = 0x8100;
const bit<8>  PROTO_TCP = 6;
const bit<8>  PROTO_UDP = 17;
const bit<16> VXLAN_PORT = 4789;
const bit<48> ROUTER_MAC = 0xfeffffffffff;

typedef bit<9>  port_t;
typedef bit<32> ip4_t;
typedef bit<48> mac_t;

header ethernet_t { mac_t dstAddr; mac_t srcAddr; bit<16> etherType; }
header vlan_t     { bit<3> pcp; bit<1> dei; bit<12> vid; bit<16> etherType; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen;
    bit<16> identification; bit<3> flags; bit<13> fragOffset;
    bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    ip4_t srcAddr; ip4_t dstAddr;
}
header tcp_t {
    bit<16> srcPort; bit<16> dstPort; bit<32> seqNo; bit<32> ackNo;
    bit<4> dataOffset; bit<4> res; bit<8> flags; bit<16> window;
    bit<16> checksum; bit<16> urgentPtr;
}
header udp_t  { bit<16> srcPort; bit<16> dstPort; bit<16> len; bit<16> checksum; }
header vxlan_t { bit<8> flags; bit<24> reserved; bit<24> vni; bit<8> reserved2; }

// ingress → egress: the ingress port and whether the packet was replicated
header bridged_t { bit<6> pad; bit<1> mcast; port_t ingress_port; }

struct headers_t {
    bridged_t  bridged;
    ethernet_t ethernet;
    vlan_t     vlan;
    ipv4_t     ipv4;
    tcp_t      tcp;
    udp_t      udp;
    vxlan_t    vxlan;
    ethernet_t inner_ethernet;
    ipv4_t     inner_ipv4;
    tcp_t      inner_tcp;
    udp_t      inner_udp;
}

struct metadata_t {
    ip4_t    loopback;   // switch_config
    bit<1>   host_port;  // port_role: the packet entered from a host-facing port
    bit<24>  vni;        // tenant: the VXLAN VNI, 0 for plain IP
    // innermost 5-tuple (hash5 input)
    bit<8>   l4_proto;
    ip4_t    l4_src;
    ip4_t    l4_dst;
    bit<16>  l4_sport;
    bit<16>  l4_dport;
    bit<32>  h5;         // hash5 of the innermost 5-tuple
    ip4_t    lb_addr;    // the address the packet was sent to (VIP or TIP)
    bit<16>  n;          // vector size of the entry that hit (lb, lb_local, route_ecmp)
    bit<2>   lb_kind;    // 0 none, 1 vip_local, 2 vip, 3 route
    bit<32>  acc;        // Σ r_i, < 4n
    bit<16>  idx;        // member index h5 % n
    bit<24>  mvni;       // chosen member's VNI (0 = TIP)
    ip4_t    member;     // chosen member
    ip4_t    underlay;   // encap: outer destination
    mac_t    dmac;       // encap: inner destination MAC
    bit<1>   encap;      // the tunnel entry hit
    ip4_t    route_net;  // matched ECMP route prefix
    bit<8>   route_len;
    ip4_t    nexthop;    // underlay lookup key
    bit<1>   drop;
}

struct egress_metadata_t { }

/* ------------------------------------------------------------------ ingress parser */
parser NetcIngressParser(packet_in pkt, out headers_t hdr, out metadata_t meta,
                         out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        // every field of `out meta` is written here, so none is read
        // uninitialised (tests/test_p4_tna.py checks the list is complete)
        meta.loopback = 0; meta.host_port = 0; meta.vni = 0; meta.l4_proto = 0;
        meta.l4_src = 0; meta.l4_dst = 0; meta.l4_sport = 0; meta.l4_dport = 0;
        meta.h5 = 0; meta.lb_addr = 0; meta.n = 0; meta.lb_kind = 0;
        meta.acc = 0; meta.idx = 0; meta.mvni = 0; meta.member = 0;
        meta.underlay = 0; meta.dmac = 0; meta.encap = 0; meta.route_net = 0;
        meta.route_len = 0; meta.nexthop = 0; meta.drop = 0;
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETHERTYPE_VLAN: parse_vlan;
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_vlan {
        pkt.extract(hdr.vlan);
        transition select(hdr.vlan.etherType) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) {
            PROTO_TCP: parse_tcp;
            PROTO_UDP: parse_udp;
            default: accept;
        }
    }
    state parse_tcp { pkt.extract(hdr.tcp); transition accept; }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dstPort) {
            VXLAN_PORT: parse_vxlan;
            default: accept;
        }
    }
    state parse_vxlan {
        pkt.extract(hdr.vxlan);
        pkt.extract(hdr.inner_ethernet);
        transition select(hdr.inner_ethernet.etherType) {
            ETHERTYPE_IPV4: parse_inner_ipv4;
            default: accept;
        }
    }
    state parse_inner_ipv4 {
        pkt.extract(hdr.inner_ipv4);
        transition select(hdr.inner_ipv4.protocol) {
            PROTO_TCP: parse_inner_tcp;
            PROTO_UDP: parse_inner_udp;
            default: accept;
        }
    }
    state parse_inner_tcp { pkt.extract(hdr.inner_tcp); transition accept; }
    state parse_inner_udp { pkt.extract(hdr.inner_udp); transition accept; }
}

/* ----------------------------------------------------------------- ingress */
control NetcIngress(inout headers_t hdr, inout metadata_t meta,
                    in ingress_intrinsic_metadata_t ig_intr_md,
                    in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                    inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                    inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    // hash5 (specs/functors.md §6): CRC-32/ISO-HDLC, spelled out so that no
    // default of the target decides it.
    CRCPolynomial<bit<32>>(32w0x04C11DB7, true, false, false,
                           32w0xFFFFFFFF, 32w0xFFFFFFFF) crc32_iso_hdlc;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32_iso_hdlc) hash5;

    @id(0x01000001) action drop() { ig_dprsr_md.drop_ctl = 1; meta.drop = 1; }
    @id(0x01000002) action nop() { }

    // switch_config: keyless; its default action carries the loopback.
    @id(0x01000003) action set_config(ip4_t loopback) { meta.loopback = loopback; }
    @id(0x02000001) table switch_config {
        key = { }
        actions = { set_config; }
        default_action = set_config(0);
        size = 1;
    }

    // port_role (p4_host_port): host-facing ports of a ToR.
    @id(0x01000004) action set_host_port() { meta.host_port = 1; }
    @id(0x02000002) table port_role {
        key = { ig_intr_md.ingress_port: exact @name("ingress_port"); }
        actions = { set_host_port; nop; }
        default_action = nop();
        size = 512;
    }

    // port_tenant (p4_port_vni): the VNIs a host-facing port may send.
    @id(0x02000003) table port_tenant {
        key = {
            ig_intr_md.ingress_port: exact @name("ingress_port");
            meta.vni: exact @name("vni");
        }
        actions = { nop; drop; }
        default_action = drop();
        size = 4096;
    }

    // acl (p4_acl): ternary src/dst, ternary proto (0 = any), dport range.
    @id(0x02000004) table acl {
        key = {
            meta.l4_src: ternary @name("src");
            meta.l4_dst: ternary @name("dst");
            meta.l4_proto: ternary @name("proto");
            meta.l4_dport: range @name("dport");
        }
        actions = { drop; nop; }
        default_action = nop();
        size = 1024;
    }

    // mcast (p4_mcast): (VNI, inner group) → PRE multicast group.
    @id(0x01000005) action set_mcast_grp(bit<16> mgid) {
        ig_tm_md.mcast_grp_a = mgid;
        hdr.bridged.mcast = 1;
    }
    @id(0x02000005) table mcast {
        key = {
            meta.vni: exact @name("vni");
            hdr.inner_ipv4.dstAddr: exact @name("group");
        }
        actions = { set_mcast_grp; nop; }
        default_action = nop();
        size = 4096;
    }

    // lb / lb_local: record n; the modulo chain below computes h5 % n.
    @id(0x01000006) action lb(bit<16> n) { meta.n = n; meta.lb_kind = 2; }
    @id(0x01000007) action lb_local(bit<16> n) { meta.n = n; meta.lb_kind = 1; }

    // vip_local (p4_vip_local, Rubik): host-facing packets only, before vip.
    @id(0x02000006) table vip_local {
        key = {
            meta.vni: exact @name("vni");
            meta.lb_addr: exact @name("vip");
            meta.l4_proto: exact @name("proto");
            meta.l4_dport: exact @name("port");
        }
        actions = { lb_local; nop; }
        default_action = nop();
        size = 16384;
    }

    // vip (p4_vip): Duet's host table.
    @id(0x02000007) table vip {
        key = {
            meta.vni: exact @name("vni");
            meta.lb_addr: exact @name("vip");
            meta.l4_proto: exact @name("proto");
            meta.l4_dport: exact @name("port");
        }
        actions = { lb; nop; }
        default_action = nop();
        size = 16384;
    }

    // ecmp / ecmp_local (p4_ecmp_member[_local]): (vip, proto, port, idx) →
    // a member of the action profile (shared to_member actions).
    @id(0x01000008) action to_member(bit<24> mvni, ip4_t member) {
        meta.mvni = mvni;
        meta.member = member;
    }
    @id(0x11000001) ActionProfile(4096) ecmp_profile;
    @id(0x11000002) ActionProfile(4096) ecmp_local_profile;
    @id(0x02000008) table ecmp {
        key = {
            meta.lb_addr: exact @name("vip");
            meta.l4_proto: exact @name("proto");
            meta.l4_dport: exact @name("port");
            meta.idx: exact @name("idx");
        }
        actions = { to_member; }
        implementation = ecmp_profile;
        size = 4096;
    }
    @id(0x02000009) table ecmp_local {
        key = {
            meta.lb_addr: exact @name("vip");
            meta.l4_proto: exact @name("proto");
            meta.l4_dport: exact @name("port");
            meta.idx: exact @name("idx");
        }
        actions = { to_member; }
        implementation = ecmp_local_profile;
        size = 4096;
    }

    // tunnel (p4_tunnel): where to encapsulate (the rewrite is in apply).
    @id(0x01000009) action encap(ip4_t underlay, mac_t dmac) {
        meta.underlay = underlay;
        meta.dmac = dmac;
        meta.encap = 1;
    }
    @id(0x0200000a) table tunnel {
        key = {
            meta.mvni: exact @name("mvni");
            meta.member: exact @name("member");
        }
        actions = { encap; drop; }
        default_action = drop();
        size = 512;
    }

    // route / route_member (p4_route, p4_route_member; Anolis gateway).
    @id(0x0100000a) action route_ecmp(ip4_t net, bit<8> len, bit<16> n) {
        meta.route_net = net;
        meta.route_len = len;
        meta.n = n;
        meta.lb_kind = 3;
    }
    @id(0x0200000b) table route {
        key = { hdr.ipv4.dstAddr: lpm @name("dst"); }
        actions = { route_ecmp; nop; }
        default_action = nop();
        size = 1024;
    }
    @id(0x0100000b) action set_nexthop(ip4_t nexthop) { meta.nexthop = nexthop; }
    @id(0x0200000c) table route_member {
        key = {
            meta.route_net: exact @name("net");
            meta.route_len: exact @name("len");
            meta.idx: exact @name("idx");
        }
        actions = { set_nexthop; drop; }
        default_action = drop();
        size = 4096;
    }

    // underlay (p4_underlay): LPM on the next hop → egress port.
    @id(0x0100000c) action forward(port_t port) {
        ig_tm_md.ucast_egress_port = port;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    @id(0x0200000d) table underlay {
        key = { meta.nexthop: lpm @name("nexthop"); }
        actions = { forward; drop; }
        default_action = drop();
        size = 4096;
    }

    // ---- Tofino only: idx = h5 % n without `%` (see the header comment).
    // r = (b_i · (2^(8i) mod n)) mod n, filled by the control plane per n.
    @id(0x0100000d) action add_residue(bit<32> r) { meta.acc = meta.acc + r; }
    // idx = acc − k·n for the k with k·n <= acc < (k+1)·n.
    @id(0x0100000e) action reduce(bit<32> sub) {
        meta.idx = (bit<16>) (meta.acc - sub);
    }
    @id(0x0200000e) table mod_b0 {
        key = { meta.n: exact @name("n"); meta.h5[7:0]: exact @name("b0"); }
        actions = { add_residue; }
        size = 65536;
    }
    @id(0x0200000f) table mod_b1 {
        key = { meta.n: exact @name("n"); meta.h5[15:8]: exact @name("b1"); }
        actions = { add_residue; }
        size = 65536;
    }
    @id(0x02000010) table mod_b2 {
        key = { meta.n: exact @name("n"); meta.h5[23:16]: exact @name("b2"); }
        actions = { add_residue; }
        size = 65536;
    }
    @id(0x02000011) table mod_b3 {
        key = { meta.n: exact @name("n"); meta.h5[31:24]: exact @name("b3"); }
        actions = { add_residue; }
        size = 65536;
    }
    @id(0x02000012) table mod_reduce {
        key = { meta.n: exact @name("n"); meta.acc: range @name("acc"); }
        actions = { reduce; }
        size = 1024;
    }

    apply {
        meta.host_port = 0;
        meta.drop = 0;
        meta.encap = 0;
        meta.lb_kind = 0;
        hdr.bridged.setValid();
        hdr.bridged.pad = 0;
        hdr.bridged.mcast = 0;
        hdr.bridged.ingress_port = ig_intr_md.ingress_port;
        if (!hdr.ipv4.isValid()) { drop(); return; }
        switch_config.apply();
        port_role.apply();

        // tenant classification: the VXLAN VNI; plain IP is VNI 0.
        meta.vni = 0;
        if (hdr.vxlan.isValid()) { meta.vni = hdr.vxlan.vni; }
        if (meta.host_port == 1 && meta.vni != 0) {
            port_tenant.apply();
            if (meta.drop == 1) { return; }
        }

        // the innermost 5-tuple and its hash5 (specs/functors.md §6)
        if (hdr.inner_ipv4.isValid()) {
            meta.l4_proto = hdr.inner_ipv4.protocol;
            meta.l4_src = hdr.inner_ipv4.srcAddr;
            meta.l4_dst = hdr.inner_ipv4.dstAddr;
            if (hdr.inner_tcp.isValid()) {
                meta.l4_sport = hdr.inner_tcp.srcPort; meta.l4_dport = hdr.inner_tcp.dstPort;
            } else if (hdr.inner_udp.isValid()) {
                meta.l4_sport = hdr.inner_udp.srcPort; meta.l4_dport = hdr.inner_udp.dstPort;
            }
        } else {
            meta.l4_proto = hdr.ipv4.protocol;
            meta.l4_src = hdr.ipv4.srcAddr;
            meta.l4_dst = hdr.ipv4.dstAddr;
            if (hdr.tcp.isValid()) {
                meta.l4_sport = hdr.tcp.srcPort; meta.l4_dport = hdr.tcp.dstPort;
            } else if (hdr.udp.isValid()) {
                meta.l4_sport = hdr.udp.srcPort; meta.l4_dport = hdr.udp.dstPort;
            }
        }
        meta.h5 = hash5.get({ meta.l4_proto, meta.l4_src, meta.l4_dst,
                              meta.l4_sport, meta.l4_dport });

        acl.apply();
        if (meta.drop == 1) { return; }

        // Athena: tenant multicast (outer destination is a group address)
        if (hdr.vxlan.isValid() && hdr.inner_ipv4.isValid()
                && hdr.ipv4.dstAddr[31:28] == 4w0xe) {
            if (mcast.apply().hit) { return; }
        }

        meta.lb_addr = hdr.ipv4.dstAddr;
        meta.nexthop = hdr.ipv4.dstAddr;
        // lb_kind is set by lb_local / lb / route_ecmp (netc renders no
        // vip, vip_local or route entry with another action).
        if (meta.host_port == 1) { vip_local.apply(); }
        if (meta.lb_kind == 0) { vip.apply(); }
        if (meta.lb_kind == 0) { route.apply(); }

        if (meta.lb_kind != 0) {
            // idx = h5 % n: out of range (no ecmp/route_member entry) if an
            // n has no modulo entries.
            meta.acc = 0;
            meta.idx = 0xffff;
            mod_b0.apply();
            mod_b1.apply();
            mod_b2.apply();
            mod_b3.apply();
            mod_reduce.apply();
        }
        if (meta.lb_kind == 1) {
            ecmp_local.apply();
        } else if (meta.lb_kind == 2) {
            ecmp.apply();
        } else if (meta.lb_kind == 3) {
            route_member.apply();
        }
        if (meta.lb_kind == 1 || meta.lb_kind == 2) {
            tunnel.apply();
        }
        if (meta.drop == 1) { return; }

        if (meta.encap == 1) {
            if (!hdr.vxlan.isValid()) {
                hdr.inner_ipv4 = hdr.ipv4;
                hdr.inner_tcp = hdr.tcp;
                hdr.inner_udp = hdr.udp;
                hdr.tcp.setInvalid();
                hdr.inner_ethernet.setValid();
                hdr.inner_ethernet.etherType = ETHERTYPE_IPV4;
                hdr.udp.setValid();
                hdr.vxlan.setValid();
                hdr.ipv4.totalLen = hdr.inner_ipv4.totalLen + 50;
                hdr.ipv4.protocol = PROTO_UDP;
                hdr.ipv4.ttl = 64;
            }
            hdr.inner_ethernet.srcAddr = ROUTER_MAC;
            hdr.inner_ethernet.dstAddr = meta.dmac;
            hdr.udp.srcPort = 0xc000 | (bit<16>) meta.h5[13:0];
            hdr.udp.dstPort = VXLAN_PORT;
            hdr.udp.len = hdr.inner_ipv4.totalLen + 30;
            hdr.udp.checksum = 0;
            hdr.vxlan.flags = 0x08;
            hdr.vxlan.reserved = 0;
            hdr.vxlan.vni = meta.mvni;
            hdr.vxlan.reserved2 = 0;
            hdr.ipv4.srcAddr = meta.loopback;
            hdr.ipv4.dstAddr = meta.underlay;
            meta.nexthop = meta.underlay;
        }
        underlay.apply();
    }
}

control NetcIngressDeparser(packet_out pkt, inout headers_t hdr, in metadata_t meta,
                            in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Checksum() ipv4_csum;
    apply {
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.hdrChecksum = ipv4_csum.update(
                { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
                  hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset,
                  hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr });
        }
        pkt.emit(hdr.bridged);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.vlan);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.tcp);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.vxlan);
        pkt.emit(hdr.inner_ethernet);
        pkt.emit(hdr.inner_ipv4);
        pkt.emit(hdr.inner_tcp);
        pkt.emit(hdr.inner_udp);
    }
}

/* ------------------------------------------------------------------ egress */
// Egress reads only the bridged header; the frame after it is payload.
struct egress_headers_t { bridged_t bridged; }

parser NetcEgressParser(packet_in pkt, out egress_headers_t hdr, out egress_metadata_t meta,
                        out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.bridged);
        transition accept;
    }
}

control NetcEgress(inout egress_headers_t hdr, inout egress_metadata_t meta,
                   in egress_intrinsic_metadata_t eg_intr_md,
                   in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                   inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                   inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    apply {
        // Athena: never send a replica back out of its ingress port.
        if (hdr.bridged.mcast == 1 && eg_intr_md.egress_port == hdr.bridged.ingress_port) {
            eg_dprsr_md.drop_ctl = 1;
        }
        hdr.bridged.setInvalid();
    }
}

control NetcEgressDeparser(packet_out pkt, inout egress_headers_t hdr, in egress_metadata_t meta,
                           in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply { pkt.emit(hdr.bridged); }
}

Pipeline(NetcIngressParser(), NetcIngress(), NetcIngressDeparser(),
         NetcEgressParser(), NetcEgress(), NetcEgressDeparser()) pipe;

Switch(pipe) main;
