from django.contrib.auth import views as auth_views
from django.urls import path

from portal.accounts import views

urlpatterns = [
    path("accounts/signup/", views.signup, name="signup"),
    path("accounts/login/", views.login_view, name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    # Password reset by e-mail: Django's own views (the console back-end prints the mail in development).
    path("accounts/password-reset/", auth_views.PasswordResetView.as_view(), name="password_reset"),
    path("accounts/password-reset/sent/", auth_views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path(
        "accounts/reset/<uidb64>/<token>/", auth_views.PasswordResetConfirmView.as_view(), name="password_reset_confirm"
    ),
    path("accounts/reset/done/", auth_views.PasswordResetCompleteView.as_view(), name="password_reset_complete"),
    path("accounts/confirm/<str:token>/", views.email_confirm, name="account-confirm"),
    path("accounts/confirm/", views.confirmation_resend, name="account-confirm-resend"),
    path("accounts/settings/", views.account_settings, name="account-settings"),
    path("accounts/token/", views.token, name="account-token"),
    path("accounts/token/new/", views.token_regenerate, name="account-token-regenerate"),
]
