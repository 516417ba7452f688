// One comparison column: the tokens of one request laid out as wrapped text, tokens that differ
// from the reference column at the same position highlighted, the logprob on hover.
#pragma once

#include <QRect>
#include <QWidget>
#include <vector>

#include "requests/request_record.h"

namespace lorascope::ui {

class TokenStreamView : public QWidget {
    Q_OBJECT
public:
    explicit TokenStreamView(QWidget* parent = nullptr);
    // Null reference: nothing is highlighted (this is the reference column).
    void setTokens(const std::vector<StreamedToken>& tokens, const std::vector<StreamedToken>* reference);
    int differingTokens() const { return differing_; }
    // The token under a point (widget coordinates), or -1.
    int tokenAt(const QPoint& pos) const;
    QString tooltipFor(int token) const;
    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;
    QSize sizeHint() const override;

protected:
    void paintEvent(QPaintEvent*) override;
    void resizeEvent(QResizeEvent*) override;
    bool event(QEvent* e) override;

private:
    int layoutTokens(int width, std::vector<QRect>* rects) const;
    std::vector<StreamedToken> tokens_;
    std::vector<bool> differs_;
    std::vector<QRect> rects_;
    int differing_ = 0;
};

}  // namespace lorascope::ui
