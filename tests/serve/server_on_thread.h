// Fake HTTP servers for the remote-backend tests run on a thread of their own (creating a remote
// engine blocks the caller on GET /info): this moves one there and has it listen.
#pragma once

#include <QHostAddress>
#include <QTcpServer>
#include <QThread>

namespace lorascope::test {

// Moves `server` to `thread`, starts the thread and listens there on 127.0.0.1:`port` (0: any free
// one); returns the port it listens on (0: it could not).
inline quint16 listen_on_thread(QTcpServer* server, QThread& thread, quint16 port = 0) {
    server->moveToThread(&thread);
    thread.start();
    quint16 bound = 0;
    QMetaObject::invokeMethod(server, [&] {
        server->listen(QHostAddress::LocalHost, port);
        bound = server->serverPort();
    }, Qt::BlockingQueuedConnection);
    return bound;
}

}  // namespace lorascope::test
