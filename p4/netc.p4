/* netc.p4 — netc's switch program (P4_16, v1model).
 *
 * One program for every switch netc drives: Duet's hardware Mux (VIP →
 * ECMP member → tunnel), Rubik's ToR-local mappings, Ananta's DoS ACL,
 * Anolis's ECMP gateway routes, Athena's per-tenant multicast, and the
 * fabric-edge tenant check. The tables are the contract of
 * specs/targets.md §1: one P4 table per located `p4_*` relation.
 *
 * Every table, action and action profile has a pinned @id; p4/netc.p4info.txtpb
 * lists exactly these (tests/test_p4_program.py parses this file and checks).
 *
 * The 5-tuple hash is specs/functors.md §6 (`hash5`): CRC-32/ISO-HDLC over
 * proto ++ src ++ dst ++ sport ++ dport (8, 32, 32, 16, 16 bits) of the
 * INNERMOST IPv4 packet, base 0, max 2^32; the member index is h5 % n, where
 * n comes from the VIP (or route) entry. P4 has no run-time `%`, so the
 * actions compute it with the same hash over the same fields, base 0, max n:
 * v1model's hash yields base + (crc % max), which is h5 % n bit for bit. h5
 * itself stays for the VXLAN UDP source port. The index → member mapping is
 * an explicit exact table (not an action selector), because P4Runtime leaves
 * a selector's member order to the target and AFF-1 needs the vector order
 * netc computed.
 */
#include <core.p4>
#include <v1model.p4>

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

struct headers_t {
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
    bit<16>  idx;        // member index h5 % n
    bit<24>  mvni;       // chosen member's VNI (0 = TIP)
    ip4_t    member;     // chosen member
    ip4_t    route_net;  // matched ECMP route prefix
    bit<8>   route_len;
    ip4_t    nexthop;    // underlay lookup key
    bit<1>   drop;
}

/* ------------------------------------------------------------------ parser */
parser NetcParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t std) {
    state start {
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

control NetcVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

/* ----------------------------------------------------------------- ingress */
control NetcIngress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t std) {

    @id(0x01000001) action drop() { mark_to_drop(std); meta.drop = 1; }
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
        key = { std.ingress_port: exact @name("ingress_port"); }
        actions = { set_host_port; nop; }
        default_action = nop();
        size = 512;
    }

    // port_tenant (p4_port_vni): the VNIs a host-facing port may send (ISO-1
    // at the fabric edge). A VXLAN packet from a host port with another VNI
    // is dropped (miss → drop).
    @id(0x02000003) table port_tenant {
        key = {
            std.ingress_port: exact @name("ingress_port");
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
    @id(0x01000005) action set_mcast_grp(bit<16> mgid) { std.mcast_grp = mgid; }
    @id(0x02000005) table mcast {
        key = {
            meta.vni: exact @name("vni");
            hdr.inner_ipv4.dstAddr: exact @name("group");
        }
        actions = { set_mcast_grp; nop; }
        default_action = nop();
        size = 4096;
    }

    // lb / lb_local: idx = hash5 % n. P4 has no run-time `%`; v1model's hash
    // with max = n over hash5's fields and algorithm is base + crc % max =
    // h5 % n (h5 is the same crc with max 2^32).
    @id(0x01000006) action lb(bit<16> n) {
        hash(meta.idx, HashAlgorithm.crc32, (bit<16>) 0,
             { meta.l4_proto, meta.l4_src, meta.l4_dst, meta.l4_sport, meta.l4_dport },
             n);
    }
    @id(0x01000007) action lb_local(bit<16> n) {
        hash(meta.idx, HashAlgorithm.crc32, (bit<16>) 0,
             { meta.l4_proto, meta.l4_src, meta.l4_dst, meta.l4_sport, meta.l4_dport },
             n);
    }

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
    @id(0x11000001) action_profile(32w4096) ecmp_profile;
    @id(0x11000002) action_profile(32w4096) ecmp_local_profile;
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

    // tunnel (p4_tunnel): encapsulate to a DIP's host (VXLAN, VNI = mvni,
    // inner dst MAC = the DIP's) or to a TIP (VXLAN VNI 0). A packet that
    // arrived VXLAN-encapsulated is decapsulated and re-encapsulated (its
    // outer headers are rewritten); a plain IP packet gets new outer headers.
    @id(0x01000009) action encap(ip4_t underlay, mac_t dmac) {
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
        hdr.inner_ethernet.dstAddr = dmac;
        hdr.udp.srcPort = 0xc000 | (bit<16>) meta.h5[13:0];
        hdr.udp.dstPort = VXLAN_PORT;
        hdr.udp.len = hdr.inner_ipv4.totalLen + 30;
        hdr.udp.checksum = 0;
        hdr.vxlan.flags = 0x08;
        hdr.vxlan.reserved = 0;
        hdr.vxlan.vni = meta.mvni;
        hdr.vxlan.reserved2 = 0;
        hdr.ipv4.srcAddr = meta.loopback;
        hdr.ipv4.dstAddr = underlay;
        meta.nexthop = underlay;
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
        // idx = hash5 % n, as in lb
        hash(meta.idx, HashAlgorithm.crc32, (bit<16>) 0,
             { meta.l4_proto, meta.l4_src, meta.l4_dst, meta.l4_sport, meta.l4_dport },
             n);
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
        std.egress_spec = port;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    @id(0x0200000d) table underlay {
        key = { meta.nexthop: lpm @name("nexthop"); }
        actions = { forward; drop; }
        default_action = drop();
        size = 4096;
    }

    apply {
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
        hash(meta.h5, HashAlgorithm.crc32, (bit<32>) 0,
             { meta.l4_proto, meta.l4_src, meta.l4_dst, meta.l4_sport, meta.l4_dport },
             (bit<64>) 0x100000000);

        acl.apply();
        if (meta.drop == 1) { return; }

        // Athena: tenant multicast (outer destination is a group address)
        if (hdr.vxlan.isValid() && hdr.inner_ipv4.isValid()
                && hdr.ipv4.dstAddr[31:28] == 4w0xe) {
            if (mcast.apply().hit) { return; }
        }

        meta.lb_addr = hdr.ipv4.dstAddr;
        meta.nexthop = hdr.ipv4.dstAddr;
        bool balanced = false;
        if (meta.host_port == 1) {
            if (vip_local.apply().hit) { ecmp_local.apply(); balanced = true; }
        }
        if (!balanced) {
            if (vip.apply().hit) { ecmp.apply(); balanced = true; }
        }
        if (balanced) {
            tunnel.apply();
        } else {
            if (route.apply().hit) { route_member.apply(); }
        }
        if (meta.drop == 1) { return; }
        underlay.apply();
    }
}

/* ------------------------------------------------------------------ egress */
control NetcEgress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t std) {
    apply {
        // Athena: never send a replica back out of its ingress port.
        if (std.mcast_grp != 0 && std.egress_port == std.ingress_port) {
            mark_to_drop(std);
        }
    }
}

control NetcComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset,
              hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control NetcDeparser(packet_out pkt, in headers_t hdr) {
    apply {
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

V1Switch(NetcParser(), NetcVerifyChecksum(), NetcIngress(), NetcEgress(),
         NetcComputeChecksum(), NetcDeparser()) main;
