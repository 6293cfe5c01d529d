//! The real `netc` binary for the tests: `netc serve` on loopback (port 0,
//! `--no-push`: the app writes the switches), and `netc compile` for the
//! from-scratch expectation. The binary is $NETC_BIN (the README's test
//! command sets it to the release build), else the workspace's
//! target/release/netc; missing, the tests fail and say so. Every daemon
//! started is stopped by its own Process handle.
package org.netc.onos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

final class NetcServe implements AutoCloseable {

    final Process process;
    final String url;
    final String token;

    private NetcServe(Process process, String url, String token) {
        this.process = process;
        this.url = url;
        this.token = token;
    }

    /** The repository's root (onos-app/..). */
    static Path repo() {
        return Path.of(System.getProperty("basedir", ".")).toAbsolutePath().getParent();
    }

    static String bin() {
        String env = System.getenv("NETC_BIN");
        Path p = env != null && !env.isEmpty() ? Path.of(env) : repo().resolve("target/release/netc");
        if (!Files.isExecutable(p)) {
            throw new IllegalStateException("no netc binary at " + p
                    + ": build it (cargo build --release) or set NETC_BIN");
        }
        return p.toString();
    }

    static NetcServe start(Path state, String... extra) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(bin(), "serve", "--listen", "127.0.0.1:0", "--state",
                state.toString(), "--no-push", "--json"));
        cmd.addAll(List.of(extra));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.redirectError(state.resolveSibling(state.getFileName() + ".stderr").toFile());
        Files.createDirectories(state);
        Process p = pb.start();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String first = out.readLine();
        if (first == null) {
            p.destroy();
            throw new IOException("netc serve exited before listening; see " + state + ".stderr");
        }
        JsonNode listening = new ObjectMapper().readTree(first);
        // the log keeps coming on stdout: drain it so the daemon never blocks on a full pipe
        Thread drain = new Thread(() -> {
            try {
                while (out.readLine() != null) {
                    // discard
                }
            } catch (IOException e) {
                // the daemon stopped
            }
        }, "netc-serve-log");
        drain.setDaemon(true);
        drain.start();
        String token = Files.readString(Path.of(listening.path("token_file").asText()));
        return new NetcServe(p, listening.path("url").asText(), token);
    }

    NetcClient client() {
        return new NetcClient(url, token);
    }

    /** `netc compile FILES --out DIR`, the files written under DIR/in. */
    static Path compile(Path dir, List<NetcClient.IntentFile> files) throws IOException, InterruptedException {
        Path in = dir.resolve("in");
        Files.createDirectories(in);
        List<String> cmd = new ArrayList<>(List.of(bin(), "compile"));
        for (NetcClient.IntentFile f : files) {
            Path p = in.resolve(f.name);
            Files.writeString(p, f.text);
            cmd.add(p.toString());
        }
        Path out = dir.resolve("out");
        cmd.add("--out");
        cmd.add(out.toString());
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(dir.resolve("compile.log").toFile()).start();
        if (!p.waitFor(300, TimeUnit.SECONDS) || p.exitValue() != 0) {
            p.destroy();
            throw new IOException("netc compile failed: " + Files.readString(dir.resolve("compile.log")));
        }
        return out;
    }

    @Override
    public void close() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
    }
}
