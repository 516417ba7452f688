// One comparison column: the tokens of one request laid out as wrapped text, tokens that differ
// from the reference column at the same position highlighted; on hover the token's alternatives
// (requests/alternatives_popup.h) when the request asked for them, else its logprob.
#pragma once

#include <QRect>
#include <QWidget>
#include <vector>

#include "requests/request_record.h"

namespace lorascope::ui {

class AlternativesPopup;

class TokenStreamView : public QWidget {
    Q_OBJECT
public:
    explicit TokenStreamView(QWidget* parent = nullptr);
    // Null reference: nothing is highlighted (this is the reference column). `offset`: where these
    // tokens begin in the reference's output (a fork's, RequestRecord::fork_offset): token i is
    // compared with the reference's token offset + i.
    void setTokens(const std::vector<StreamedToken>& tokens, const std::vector<StreamedToken>* reference,
                   size_t offset = 0);
    int differingTokens() const { return differing_; }
    // Surprise shading (compare/surprise_view.h): each token's background as deep as its logprob
    // is low, none for special tokens (a prompt's first, which has no logprob), no differences.
    void setSurpriseShading(bool on) { shading_ = on; update(); }
    // The background surprise shading gives a token of `logprob` (fully deep from kSurpriseFloor).
    static QColor surpriseShade(const QPalette& palette, float logprob);
    static constexpr float kSurpriseFloor = -10.0f;
    // The token under a point (widget coordinates), or -1.
    int tokenAt(const QPoint& pos) const;
    QString tooltipFor(int token) const;
    // Shows token `token`'s alternatives (as hovering it does); false when it has none.
    bool showAlternatives(int token);
    AlternativesPopup* alternativesPopup() const { return popup_; }
    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;
    QSize sizeHint() const override;

protected:
    void paintEvent(QPaintEvent*) override;
    void resizeEvent(QResizeEvent*) override;
    bool event(QEvent* e) override;
    void leaveEvent(QEvent* e) override;

Q_SIGNALS:
    // An alternative clicked in the popup: fork the request at `position` with `choice` forced.
    void alternativeChosen(int position, const lorascope::TokenAlternative& choice);

private:
    int layoutTokens(int width, std::vector<QRect>* rects) const;
    std::vector<StreamedToken> tokens_;
    std::vector<bool> differs_;
    std::vector<QRect> rects_;
    int differing_ = 0;
    bool shading_ = false;
    AlternativesPopup* popup_ = nullptr;   // created on first use
};

}  // namespace lorascope::ui
